package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
)

// rebootedMTU is what changing the MTU by rolling reboots cost.
type rebootedMTU struct {
	Took           time.Duration // from the first drain to the last uncordon
	Broken, Failed int           // long-lived connections broken; short-lived and HTTPS requests failed
	Connections    int           // long-lived connections the probe held, over the turns
}

// rollingRebootMTU changes the pod MTU the way clusters have it changed
// where no live change exists (OpenShift's MTU migration, a machine config
// rolled out): one node at a time, drained (cordoned, and every pod no
// DaemonSet runs evicted), its network configuration written with the new
// MTU, rebooted (the lab's reboot stands for the machine's: every pod of the
// node is started again, with the new MTU), and uncordoned once it and its
// pods are back. The probe runs around each node's turn on its own, so a
// turn counts the connections of the pods that exist then, and a request
// fails only while its pod is really away.
func rollingRebootMTU(b *testing.B, name string, c client.Client, mtu int, nodes []string) rebootedMTU {
	b.Helper()
	ctx := context.Background()
	var res rebootedMTU
	for _, node := range nodes {
		if out, err := runNetshift("lab", "probe", "start", "--name", name); err != nil {
			b.Fatalf("probe start: %v: %s", err, out)
		}
		time.Sleep(probeQuiet)
		start := time.Now()
		setUnschedulable(b, c, node, true)
		evictAllButDaemonSets(b, c, node)
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
		if err := s.RebuildNode(ctx, node); err != nil {
			b.Fatalf("node %s: %v", node, err)
		}
		waitNodeBack(b, c, node, rebooted)
		setUnschedulable(b, c, node, false)
		res.Took += time.Since(start)
		time.Sleep(probeQuiet)
		out, _ := runNetshift("lab", "probe", "stop", "--name", name, "-o", "json")
		var r probe.Report
		if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &r); err != nil {
			b.Fatalf("probe stop: %v: %s", err, out)
		}
		res.Broken += brokenIn(r)
		res.Connections += len(r.LongLived)
		res.Failed += r.ShortLived.Failures + r.HTTPS.Failures
		b.Logf("rolling reboot: node %s back at MTU %d after %.1f s; %d of %d long-lived connections broken, %d requests failed",
			node, mtu, time.Since(start).Seconds()-probeQuiet.Seconds(), res.Broken, res.Connections, res.Failed)
	}
	// What the reboots were for: the rebooted nodes' pods run at the new MTU.
	s, err := lab.LoadState(name)
	if err != nil {
		b.Fatal(err)
	}
	rebootedNodes := map[string]bool{}
	for _, n := range nodes {
		rebootedNodes[n] = true
	}
	for _, p := range labPods(b, s) {
		if !rebootedNodes[p.Node] {
			continue
		}
		h, err := netdev.Open(p.Netns)
		if err != nil {
			b.Fatal(err)
		}
		got, err := h.MTU("eth0")
		h.Close()
		if err != nil || got != mtu {
			b.Errorf("pod %s on rebooted node %s has MTU %d (%v), want %d", p.Name, p.Node, got, err, mtu)
		}
	}
	return res
}

func setUnschedulable(b *testing.B, c client.Client, node string, on bool) {
	b.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.Patch(context.Background(), n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		b.Fatalf("node %s: unschedulable=%t: %v", node, on, err)
	}
}

// evictAllButDaemonSets evicts, through the Eviction API, every pod of the
// node that no DaemonSet runs, and waits until they are gone: kubectl
// drain --ignore-daemonsets.
func evictAllButDaemonSets(b *testing.B, c client.Client, node string) {
	b.Helper()
	evictable := func() []corev1.Pod {
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods); err != nil {
			b.Fatal(err)
		}
		var out []corev1.Pod
		for _, p := range pods.Items {
			if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if owner := metav1.GetControllerOf(&p); owner != nil && owner.Kind == "DaemonSet" {
				continue
			}
			out = append(out, p)
		}
		return out
	}
	// Evicted again until gone, as kubectl drain does: a budget may refuse for a while (429).
	waitForWithin(b, "node "+node+" drained", 2*time.Minute, func() bool {
		pods := evictable()
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue // evicted: going
			}
			err := c.SubResource("eviction").Create(context.Background(), &p, &policyv1.Eviction{ObjectMeta: p.ObjectMeta})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
				b.Fatalf("evict %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
		return len(pods) == 0
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
		if err := c.List(context.Background(), &pods); err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.DeletionTimestamp == nil && !podReadySince(p, since) {
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

func podReadySince(p corev1.Pod, since time.Time) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && !c.LastTransitionTime.Time.Before(since.Truncate(time.Second))
		}
	}
	return false
}
