package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/status"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func ownedBy(pool string, nodes []string) map[string]string {
	m := map[string]string{}
	for _, n := range nodes {
		m[n] = pool
	}
	return m
}

// TestLoweringMaxParallelMidDrain: 3 of 4 nodes drain under maxParallel 3;
// maxParallel drops to 1: the three finish, and the fourth starts only once
// the count is below the new limit, i.e. when none of them holds a slot.
func TestLoweringMaxParallelMidDrain(t *testing.T) {
	cl := newCluster(t)
	cl.startOperator()
	nodes := names("n", 4)
	cl.createNodes(nodes...)
	cl.createPool("p", 1, intstr.FromInt32(3), nodes...)
	cl.startAgents(nodes...)
	sw := cl.watchSlots(ownedBy("p", nodes))
	cl.startOperation("op", nodes...)
	cl.eventually(30*time.Second, "three nodes drained", func() bool { return len(cl.holdingSlot()) == 3 })

	cl.update(&v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, func(o client.Object) {
		o.(*v1alpha1.NetshiftNodePool).Spec.MaxParallel = ptr.To(intstr.FromInt32(1))
	})
	first := cl.holdingSlot()
	for i, n := range first {
		cl.gate.release(n)
		cl.eventually(30*time.Second, n+" finished", func() bool { return cl.finished(n, "op") })
		if i < len(first)-1 {
			// Two whole passes after the node finished: a wrong admission would be written by then.
			cl.waitPasses(2)
			if h := cl.holdingSlot(); len(h) != len(first)-i-1 {
				t.Fatalf("after %s finished, holding %v: a node started while the pool was at or over its new limit", n, h)
			}
		}
	}
	cl.gate.openAll()
	cl.waitFinished("op", nodes...)
	if p := sw.peaks()["p"]; p != 3 {
		t.Errorf("peak %d nodes, want 3 (the old limit, never more)", p)
	}
}

// TestPDBThatBlocks: a PDB allowing no disruption (as the real disruption
// controller computes it) blocks the drain; the node stays cordoned and
// draining with the reason in its status, an Event and the blocked-evictions
// metric (onTimeout Wait, reported once the timeout passes); with onTimeout
// Fail the drain is given up, the node uncordoned and the operation marked
// failed. (That a budget lets pods go one at a time while their replacements
// start elsewhere needs a scheduler and kubelets: the e2e drain test.)
func TestPDBThatBlocks(t *testing.T) {
	cl := newCluster(t)
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1450),
		Drain: v1alpha1.DrainSettings{Timeout: &metav1.Duration{Duration: 2 * time.Second}, OnTimeout: v1alpha1.DrainTimeoutWait}}}
	if err := cl.c.Create(cl.ctx, cn); err != nil {
		t.Fatal(err)
	}
	_, reg := cl.startOperator()
	cl.createNodes("w1")
	cl.createPods("w1", 1, map[string]string{"app": "single"})
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "single", Namespace: testNS},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "single"}}},
	}
	if err := cl.c.Create(cl.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	cl.eventually(10*time.Second, "the disruption controller to count the pod healthy and allow no disruption", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(pdb), pdb)
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0
	})
	cl.startAgents("w1")
	cl.startOperation("op", "w1")
	cl.eventually(30*time.Second, "the blocked eviction reported in the node's status", func() bool {
		s := cl.state("w1")
		return s.DrainStatus == v1alpha1.Draining && strings.Contains(s.DrainMessage, "eviction of pod work/w1-pod-0 blocked")
	})
	if !cl.hasEvent("w1", "EvictionBlocked") {
		t.Error("no EvictionBlocked event")
	}
	if n := metricValue(t, reg, "netshift_drain_evictions_blocked_total", "default"); n < 1 {
		t.Errorf("netshift_drain_evictions_blocked_total = %v, want the retried evictions counted", n)
	}
	cl.eventually(30*time.Second, "the timeout reported, still waiting", func() bool {
		s := cl.state("w1")
		return s.DrainStatus == v1alpha1.Draining && strings.Contains(s.DrainMessage, "over the timeout") && strings.Contains(s.DrainMessage, "onTimeout: Wait")
	})
	if !cl.node("w1").Spec.Unschedulable {
		t.Error("w1 should stay cordoned while waiting")
	}
	if !cl.hasEvent("w1", "DrainTimeout") {
		t.Error("no DrainTimeout event")
	}

	// Switch to Fail: the drain is given up and the node is not left cordoned.
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.Drain.OnTimeout = v1alpha1.DrainTimeoutFail })
	cl.waitFinished("op", "w1")
	s := cl.state("w1")
	if s.SyncStatus != v1alpha1.SyncFailed || !strings.Contains(s.LastSyncError, "drain failed") {
		t.Errorf("sync %s, error %q: want Failed with the drain failure", s.SyncStatus, s.LastSyncError)
	}
	if s.DrainFailure == nil || s.DrainFailure.Operation != "op" {
		t.Errorf("drainFailure = %+v, want one for op", s.DrainFailure)
	}
	if cl.node("w1").Spec.Unschedulable {
		t.Error("w1 left cordoned after its drain failed")
	}
	if !cl.hasEvent("w1", "DrainFailed") {
		t.Error("no DrainFailed event")
	}
	var pod corev1.Pod
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Namespace: testNS, Name: "w1-pod-0"}, &pod); err != nil || pod.DeletionTimestamp != nil {
		t.Errorf("the protected pod must survive: %v", err)
	}
}

// TestOperatorRestartMidDrain: two operators run (leader election lets one
// decide); the leader is stopped mid-drain and the other takes over from what
// the API server holds: no pool exceeds its limit, every node finishes, and
// nothing is left cordoned.
func TestOperatorRestartMidDrain(t *testing.T) {
	cl := newCluster(t)
	stop1, _ := cl.startOperator()
	nodes := names("r", 6)
	cl.createNodes(nodes...)
	cl.createPool("p", 1, intstr.FromInt32(2), nodes...)
	for _, n := range nodes {
		cl.createPods(n, 2, map[string]string{"app": "x"})
	}
	cl.startAgents(nodes...)
	sw := cl.watchSlots(ownedBy("p", nodes))
	cl.startOperation("op", nodes...)
	cl.eventually(30*time.Second, "two nodes drained", func() bool {
		h := cl.holdingSlot()
		return len(h) == 2 && cl.state(h[0]).DrainStatus == v1alpha1.DrainingComplete
	})
	stop1()
	cl.startOperator()
	cl.gate.openAll()
	cl.waitFinished("op", nodes...)
	if p := sw.peaks()["p"]; p > 2 {
		t.Errorf("pool p had %d nodes draining at once, limit 2", p)
	}
	for _, n := range nodes {
		if cl.node(n).Spec.Unschedulable {
			t.Errorf("node %s left cordoned", n)
		}
	}
}

// TestDrainDisabled: nodes go Drain_Disabled, are neither cordoned nor
// drained, and still go one at a time in the implicit default pool.
func TestDrainDisabled(t *testing.T) {
	cl := newCluster(t)
	if err := cl.c.Create(cl.ctx, &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1450), Drain: v1alpha1.DrainSettings{Disabled: true}}}); err != nil {
		t.Fatal(err)
	}
	cl.startOperator()
	nodes := names("d", 3)
	cl.createNodes(nodes...)
	for _, n := range nodes {
		cl.createPods(n, 1, map[string]string{"app": "x"})
	}
	cl.startAgents(nodes...)
	sw := cl.watchSlots(ownedBy("default", nodes))
	cl.startOperation("op", nodes...)
	cl.eventually(30*time.Second, "a node configuring without a drain", func() bool {
		h := cl.holdingSlot()
		return len(h) == 1 && cl.state(h[0]).DrainStatus == v1alpha1.DrainDisabled
	})
	h := cl.holdingSlot()[0]
	if cl.node(h).Spec.Unschedulable {
		t.Errorf("node %s cordoned with drain disabled", h)
	}
	cl.gate.openAll()
	cl.waitFinished("op", nodes...)
	var pods corev1.PodList
	_ = cl.c.List(cl.ctx, &pods, client.InNamespace(testNS))
	if len(pods.Items) != 3 {
		t.Errorf("%d pods left, want all 3: nothing is evicted with drain disabled", len(pods.Items))
	}
	if p := sw.peaks()["default"]; p != 1 {
		t.Errorf("default pool peak %d, want 1", p)
	}
}

// TestNodeCordonedBySomeoneElse: netshift drains a node an administrator had
// cordoned, records that it did not cordon it, and leaves it cordoned.
func TestNodeCordonedBySomeoneElse(t *testing.T) {
	cl := newCluster(t)
	cl.startOperator()
	cl.createNodes("m1")
	cl.update(cl.node("m1"), func(o client.Object) { o.(*corev1.Node).Spec.Unschedulable = true })
	cl.createPods("m1", 1, nil)
	cl.startAgents("m1")
	cl.startOperation("op", "m1")
	cl.eventually(30*time.Second, "m1 drained", func() bool { return cl.state("m1").DrainStatus == v1alpha1.DrainingComplete })
	if cl.state("m1").CordonedByNetshift {
		t.Error("cordonedByNetshift = true for a node someone else cordoned")
	}
	cl.gate.openAll()
	cl.waitFinished("op", "m1")
	if !cl.node("m1").Spec.Unschedulable {
		t.Error("netshift uncordoned a node someone else cordoned")
	}
}

// TestLegacyAnnotationMigration: the SR-IOV operator's node annotation moves
// into the NetshiftNodeState (an in-flight drain keeps its slot and its cordon
// is netshift's to undo) and is removed; the node's agent then releases it.
func TestLegacyAnnotationMigration(t *testing.T) {
	cl := newCluster(t)
	for name, value := range map[string]string{"l1": "Draining_Complete", "l2": "Idle"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{operator.LegacyDrainAnnotation: value}},
			Spec: corev1.NodeSpec{Unschedulable: value != "Idle"}}
		if err := cl.c.Create(cl.ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	cl.startOperator()
	cl.eventually(30*time.Second, "annotations moved", func() bool {
		for _, n := range []string{"l1", "l2"} {
			var nns v1alpha1.NetshiftNodeState
			if cl.c.Get(cl.ctx, client.ObjectKey{Name: n}, &nns) != nil {
				return false
			}
			if _, ok := cl.node(n).Annotations[operator.LegacyDrainAnnotation]; ok {
				return false
			}
		}
		return true
	})
	s := cl.state("l1")
	if s.DrainStatus != v1alpha1.DrainingComplete || s.DrainOperation != v1alpha1.LegacyDrainOperation || !s.CordonedByNetshift {
		t.Fatalf("l1 status %+v: want the adopted Draining_Complete with its cordon", s)
	}
	if s := cl.state("l2"); s.DrainStatus == v1alpha1.DrainingComplete || s.DrainStatus == v1alpha1.Draining {
		t.Fatalf("l2 was Idle, got %s", s.DrainStatus)
	}
	cl.startAgents("l1", "l2")
	cl.eventually(30*time.Second, "the adopted drain released by the agent", func() bool {
		return cl.state("l1").DrainStatus == v1alpha1.DrainIdle && !cl.node("l1").Spec.Unschedulable
	})
}

// TestNetshiftNodeStateFollowsNodes: one per Node, created and deleted with it.
func TestNetshiftNodeStateFollowsNodes(t *testing.T) {
	cl := newCluster(t)
	cl.startOperator()
	cl.createNodes("x1", "x2")
	if err := cl.c.Delete(cl.ctx, cl.node("x1")); err != nil {
		t.Fatal(err)
	}
	cl.eventually(30*time.Second, "x1's NetshiftNodeState deleted", func() bool {
		var l v1alpha1.NetshiftNodeStateList
		_ = cl.c.List(cl.ctx, &l)
		return len(l.Items) == 1 && l.Items[0].Name == "x2"
	})
	// A state left behind while the operator was down is removed too.
	if err := cl.c.Create(cl.ctx, &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: "ghost"}}); err != nil {
		t.Fatal(err)
	}
	cl.eventually(30*time.Second, "the orphan deleted", func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: "ghost"}, &v1alpha1.NetshiftNodeState{}) != nil
	})
}

// TestManyReconcilesAtOnce: twenty nodes ask at once in a pool of limit 3,
// agents finish at once, and besides the controller's own passes eight
// goroutines call Reconcile concurrently all along: the limit holds.
func TestManyReconcilesAtOnce(t *testing.T) {
	cl := newCluster(t)
	cl.gate.openAll()
	ctx, cancel := context.WithCancel(cl.ctx)
	defer cancel()
	mgr, err := ctrl.NewManager(env.OperatorConfig(), ctrl.Options{Scheme: operator.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&operator.NodeStateReconciler{Client: mgr.GetClient(), Clock: metav1.Now}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	dr := &operator.DrainReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Ledger: &operator.Ledger{},
		Metrics: operator.NewDrainMetrics(prometheus.NewRegistry()), Now: time.Now, RetryInterval: 100 * time.Millisecond}
	if err := dr.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	nodes := names("c", 20)
	cl.createNodes(nodes...)
	cl.createPool("p", 1, intstr.FromInt32(3), nodes...)
	cl.startAgents(nodes...)
	sw := cl.watchSlots(ownedBy("p", nodes))
	mgr.GetCache().WaitForCacheSync(ctx)
	var wg sync.WaitGroup
	stopHammer := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopHammer:
					return
				default:
				}
				_, _ = dr.Reconcile(ctx, ctrl.Request{})
			}
		}()
	}
	cl.startOperation("op", nodes...)
	cl.waitFinished("op", nodes...)
	close(stopHammer)
	wg.Wait()
	if p := sw.peaks()["p"]; p > 3 || p == 0 {
		t.Errorf("pool p peak %d nodes draining at once, limit 3", p)
	}
}

// TestEventsAndMetricsOfADrain: every decision is an Event on the node and
// the gauges and histograms move.
func TestEventsAndMetricsOfADrain(t *testing.T) {
	cl := newCluster(t)
	_, reg := cl.startOperator()
	cl.createNodes("e1")
	cl.startAgents("e1")
	cl.startOperation("op", "e1")
	cl.eventually(30*time.Second, "e1 holds a slot", func() bool { return cl.state("e1").DrainStatus == v1alpha1.DrainingComplete })
	cl.eventually(5*time.Second, "the draining gauge at 1", func() bool {
		return metricValue(t, reg, "netshift_drain_nodes_draining", "default") == 1
	})
	cl.gate.openAll()
	cl.waitFinished("op", "e1")
	for _, reason := range []string{"DrainQueued", "DrainStarted", "DrainComplete", "DrainReleased"} {
		if !cl.hasEvent("e1", reason) {
			t.Errorf("no %s event on node e1", reason)
		}
	}
	if n := metricValue(t, reg, "netshift_drain_duration_seconds", "default"); n != 1 {
		t.Errorf("drain durations observed = %v, want 1", n)
	}
	if n := metricValue(t, reg, "netshift_drain_nodes_draining", "default"); n != 0 {
		t.Errorf("draining gauge = %v after the release, want 0", n)
	}
}

func (cl *cluster) hasEvent(node, reason string) bool {
	cl.t.Helper()
	found := false
	cl.eventually(10*time.Second, fmt.Sprintf("a %s event on node %s", reason, node), func() bool {
		var evs eventsv1.EventList
		if err := cl.c.List(cl.ctx, &evs); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Node" && e.Regarding.Name == node && e.Reason == reason {
				found = true
			}
		}
		return found
	})
	return found
}

// metricValue reads a counter's or gauge's value (a histogram's sample
// count) for the pool from the operator's registry; -1 when absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name, pool string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "pool" || l.GetValue() != pool {
					continue
				}
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return -1
}

// TestAnInvalidStoredPoolHoldsOnlyTheNodesItMightOwn: a NetshiftNodePool stored before
// the API refused its selector value ("a b", as an older CRD allowed) cannot
// be used. Its status says why, `netshift status` shows it, the node it might
// own waits, and the pool that outranks it drains as usual; once fixed, the
// waiting node goes through.
func TestAnInvalidStoredPoolHoldsOnlyTheNodesItMightOwn(t *testing.T) {
	cl := newCluster(t)
	cl.startOperator()
	cl.gate.openAll()
	good := names("g", 2)
	all := append(slices.Clone(good), "loose") // loose: the implicit pool, which outranks nothing
	cl.createNodes(all...)
	cl.createPool("good", 1, intstr.FromInt32(1), good...)
	bad := &v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: v1alpha1.NetshiftNodePoolSpec{Priority: ptr.To[int32](50),
		NodeSelectorTerms: []v1alpha1.NodeSelectorTerm{{MatchExpressions: []v1alpha1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a b"}}}}}}}
	cl.storeWithoutTheValuePattern(bad)
	cl.startAgents(all...)
	cl.startOperation("op", all...)
	cl.waitFinished("op", good...)

	var np v1alpha1.NetshiftNodePool
	cl.eventually(30*time.Second, "netshiftnodepool bad reported invalid", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKey{Name: "bad"}, &np)
		c := meta.FindStatusCondition(np.Status.Conditions, v1alpha1.NetshiftNodePoolValid)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonInvalidSpec &&
			strings.Contains(c.Message, "spec.nodeSelectorTerms[0]")
	})
	if s := cl.state("loose"); s.DrainStatus != v1alpha1.DrainRequired {
		t.Errorf("the node the invalid pool might own is %s, want it held in %s", s.DrainStatus, v1alpha1.DrainRequired)
	}
	r, err := status.Gather(cl.ctx, cl.c)
	if err != nil || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], `netshiftnodepool "bad"`) {
		t.Errorf("netshift status problems %q (%v), want the invalid pool", r.Problems, err)
	}

	cl.update(&v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, func(o client.Object) {
		o.(*v1alpha1.NetshiftNodePool).Spec.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"ab"}
	})
	cl.waitFinished("op", "loose")
	cl.eventually(30*time.Second, "netshiftnodepool bad valid again", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKey{Name: "bad"}, &np)
		return meta.IsStatusConditionTrue(np.Status.Conditions, v1alpha1.NetshiftNodePoolValid)
	})
}

// storeWithoutTheValuePattern stores a pool whose selector values the CRD's
// schema refuses, as a cluster upgraded from an older CRD may hold one: the
// pattern is lifted from the CRD for the write and put back at once.
func (cl *cluster) storeWithoutTheValuePattern(np *v1alpha1.NetshiftNodePool) {
	cl.t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	key := client.ObjectKey{Name: "netshiftnodepools.netshift.io"}
	if err := cl.c.Get(cl.ctx, key, crd); err != nil {
		cl.t.Fatal(err)
	}
	original, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	restore := func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := crd.DeepCopy()
			if err := cl.c.Get(cl.ctx, key, cur); err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(cur.Object, original, "spec", "versions"); err != nil {
				return err
			}
			return cl.c.Update(cl.ctx, cur)
		})
		if err != nil {
			cl.t.Errorf("put the NetshiftNodePool CRD back: %v", err)
		}
	}
	cl.t.Cleanup(restore)
	relaxed := runtime.DeepCopyJSONValue(original).([]any)
	unstructured.RemoveNestedField(relaxed[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "nodeSelectorTerms",
		"items", "properties", "matchExpressions", "items", "properties", "values", "items", "pattern")
	if err := unstructured.SetNestedSlice(crd.Object, relaxed, "spec", "versions"); err != nil {
		cl.t.Fatal(err)
	}
	if err := cl.c.Update(cl.ctx, crd); err != nil {
		cl.t.Fatal(err)
	}
	// The API server takes the new schema up asynchronously.
	cl.eventually(30*time.Second, "the relaxed NetshiftNodePool schema to store "+np.Name, func() bool {
		return cl.c.Create(cl.ctx, np.DeepCopy()) == nil
	})
	restore()
}
