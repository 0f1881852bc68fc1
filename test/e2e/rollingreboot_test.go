package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/rollout"
)

// rebootedMTU is what changing the MTU by rolling reboots cost.
type rebootedMTU struct {
	Took           time.Duration // from the first drain to the last uncordon
	Broken, Failed int           // long-lived connections broken; short-lived and HTTPS requests failed
	Connections    int           // long-lived connections the probe held, over the turns
}

// rollingRebootMTU changes the pod MTU the way clusters have it changed
// where no live change exists (OpenShift's MTU migration, a machine config
// rolled out): one node at a time, drained (cordoned, and every pod that
// kubectl drain would evict evicted), its network configuration written with
// the new MTU, rebooted (the lab's reboot stands for the machine's: every pod
// of the node is started again, with the new MTU), and uncordoned once it and
// its pods are back. The probe runs around each node's turn on its own, so a
// turn counts the connections of the pods that exist then, and a request
// fails only while its pod is really away.
func rollingRebootMTU(b *testing.B, name string, c client.Client, mtu int, nodes []string) rebootedMTU {
	b.Helper()
	var res rebootedMTU
	for _, node := range nodes {
		var took time.Duration
		r := underProbe(b, name, func() {
			start := time.Now()
			rebootWithMTU(b, name, c, node, mtu)
			took = time.Since(start)
		})
		res.Took += took
		res.Broken += brokenIn(r)
		res.Connections += len(r.LongLived)
		res.Failed += r.ShortLived.Failures + r.HTTPS.Failures
		b.Logf("rolling reboot: node %s back at MTU %d after %.1f s; so far %d of %d long-lived connections broken, %d requests failed",
			node, mtu, took.Seconds(), res.Broken, res.Connections, res.Failed)
	}
	// What the reboots were for: the rebooted nodes' pods run at the new MTU.
	s, err := lab.LoadState(name)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range labPods(b, s) {
		for _, n := range nodes {
			if got := podMTU(b, p); p.Node == n && got != mtu {
				b.Errorf("pod %s on rebooted node %s has MTU %d, want %d", p.Name, n, got, mtu)
			}
		}
	}
	return res
}

// rebootWithMTU is one node's turn: drain, the new MTU in its network
// configuration, reboot, wait for it and its pods, uncordon.
func rebootWithMTU(b *testing.B, name string, c client.Client, node string, mtu int) {
	b.Helper()
	setUnschedulable(b, c, node, true)
	drainNode(b, c, node)
	s, err := lab.LoadState(name)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := nodeconfig.Read(s.NetworkConfigPath(node))
	if err != nil {
		b.Fatalf("node %s: %v", node, err)
	}
	cfg.MTU = int32(mtu)
	if err := nodeconfig.Write(s.NetworkConfigPath(node), cfg); err != nil {
		b.Fatalf("node %s: %v", node, err)
	}
	rebooted := time.Now()
	if err := s.RebuildNode(context.Background(), node); err != nil {
		b.Fatalf("node %s: %v", node, err)
	}
	waitNodeBack(b, c, node, rebooted)
	setUnschedulable(b, c, node, false)
}

func setUnschedulable(b *testing.B, c client.Client, node string, on bool) {
	b.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		b.Fatalf("node %s: unschedulable=%t: %v", node, on, err)
	}
}

// drainNode evicts, through the Eviction API, the pods of the node a drain
// must see gone (rollout.PodsToDrain, as kubectl drain --ignore-daemonsets
// picks them), again until they are gone: a budget may refuse for a while.
func drainNode(b *testing.B, c client.Client, node string) {
	b.Helper()
	waitForWithin(b, "node "+node+" drained", 2*time.Minute, func() bool {
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
			b.Fatal(err)
		}
		left := rollout.PodsToDrain(pods.Items)
		for _, p := range left {
			if p.DeletionTimestamp != nil {
				continue // evicted: going
			}
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			err := c.SubResource("eviction").Create(context.Background(), &p, ev)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
				b.Fatalf("evict %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
		return len(left) == 0
	})
}

// waitNodeBack waits until the node is Ready and every pod on it has been
// Ready since the reboot.
func waitNodeBack(b *testing.B, c client.Client, node string, since time.Time) {
	b.Helper()
	waitForWithin(b, "node "+node+" and its pods back from the reboot", 3*time.Minute, func() bool {
		var n corev1.Node
		if err := c.Get(context.Background(), client.ObjectKey{Name: node}, &n); err != nil || !nodeReady(n) {
			return false
		}
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && !readySince(p, since) {
				return false
			}
		}
		return true
	})
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readySince says whether the pod became Ready at or after since (the
// condition's time has whole seconds).
func readySince(p corev1.Pod, since time.Time) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && !c.LastTransitionTime.Time.Before(since.Truncate(time.Second))
		}
	}
	return false
}
