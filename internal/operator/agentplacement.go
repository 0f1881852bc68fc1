package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/livechange"
)

// AgentPlacement says which nodes netshift's agent can run on: Linux nodes
// that its DaemonSet's pod template is placed on (node selector, required
// node affinity, taints it does not tolerate). A node outside it never
// answers a change, so no change is for it. The DaemonSet is read past the
// cache at most once every placementRefresh; without one (a cluster whose
// agents run otherwise, the tests' control planes) every Linux node runs an agent.
type AgentPlacement struct {
	Reader    client.Reader
	DaemonSet types.NamespacedName // empty: every Linux node

	mu     sync.Mutex
	readAt time.Time
	pod    *corev1.Pod // the template as a pod; nil: none read
}

// placementRefresh is how often the agent DaemonSet is read again.
const placementRefresh = 30 * time.Second

// Facts reads what a change needs to know of each node: whether an agent runs
// there and whether it is Ready, since when.
func (p *AgentPlacement) Facts(ctx context.Context, nodes []corev1.Node, now time.Time) []livechange.NodeFacts {
	placed := placement(p.template(ctx, now))
	facts := make([]livechange.NodeFacts, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		ready, since := readiness(n)
		facts[i] = livechange.NodeFacts{Name: n.Name, RunsAgent: placed(n), Ready: ready, Since: since}
	}
	return facts
}

// template is the agent DaemonSet's pod template as a pod, read again once
// placementRefresh has passed; nil when there is none to read.
func (p *AgentPlacement) template(ctx context.Context, now time.Time) *corev1.Pod {
	if p == nil || p.DaemonSet.Name == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.readAt.IsZero() && now.Sub(p.readAt) < placementRefresh {
		return p.pod
	}
	p.readAt = now
	var ds appsv1.DaemonSet
	err := p.Reader.Get(ctx, p.DaemonSet, &ds)
	switch {
	case apierrors.IsNotFound(err):
		p.pod = nil
	case err != nil:
		// The last placement read stands: a blink of the API server must not put every node outside.
		log.FromContext(ctx).Error(err, "read the agent DaemonSet's placement", "daemonSet", p.DaemonSet)
	default:
		p.pod = &corev1.Pod{Spec: ds.Spec.Template.Spec}
	}
	return p.pod
}

// readiness is the Node's Ready condition and when it last changed (the
// Node's creation when it has none yet).
func readiness(n *corev1.Node) (bool, time.Time) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, n.CreationTimestamp.Time
}

// placement says whether the agent's pod (nil: placed everywhere) runs on a
// node: a Linux node, matching its node selector and required affinity,
// with no NoSchedule or NoExecute taint it does not tolerate, counting the
// tolerations the DaemonSet controller gives every daemon pod.
func placement(pod *corev1.Pod) func(n *corev1.Node) bool {
	if pod == nil {
		return isLinux
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	tolerations := append(append([]corev1.Toleration(nil), pod.Spec.Tolerations...), daemonTolerations...)
	schedulingTaint := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	return func(n *corev1.Node) bool {
		if !isLinux(n) {
			return false
		}
		if ok, err := affinity.Match(n); err != nil || !ok {
			return false
		}
		_, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, tolerations, schedulingTaint, false)
		return !untolerated
	}
}

// isLinux says whether the node runs Linux (or does not say).
func isLinux(n *corev1.Node) bool {
	os := n.Labels[corev1.LabelOSStable]
	return os == "" || os == "linux"
}

// daemonTolerations are what the DaemonSet controller tolerates for every
// daemon pod (a host-network one's included), whatever the effect: the taints
// the control plane puts on a node for its conditions (not ready, unreachable,
// cordoned, under pressure) say how the node is, not where the agent belongs.
var daemonTolerations = func() []corev1.Toleration {
	var out []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeDiskPressure,
		corev1.TaintNodeMemoryPressure, corev1.TaintNodePIDPressure, corev1.TaintNodeUnschedulable, corev1.TaintNodeNetworkUnavailable} {
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
	return out
}()

// String names where the placement comes from, for the logs.
func (p *AgentPlacement) String() string {
	if p == nil || p.DaemonSet.Name == "" {
		return "every Linux node"
	}
	return fmt.Sprintf("DaemonSet %s", p.DaemonSet)
}
