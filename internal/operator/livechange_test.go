package operator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/ovsbridge"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/operator"
)

// TestClockCheckStopsALiveChange: one agent's clock is 200 ms ahead of the
// operator's; its clock check (round trips to the operator's time endpoint)
// fails, the change ends Failed before T0 with Degraded naming the node and
// the measured offset, and no node was given a schedule or cordoned.
func TestClockCheckStopsALiveChange(t *testing.T) {
	cl := newCluster(t)
	ctx, bound := startOperator(t, cl)
	cl.createNodes("k1", "k2")
	addr := timeEndpoint(t, bound)
	startAgents(t, ctx, addr, map[string]time.Duration{"k1": 0, "k2": 200 * time.Millisecond})
	cn := createNetwork(t, cl, 1450)
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To[int32](1400) })
	cl.eventually(30*time.Second, "the change to fail its preconditions", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Change != nil && cn.Status.Change.Phase == v1alpha1.PhaseFailed
	})
	deg := meta.FindStatusCondition(cn.Status.Conditions, operator.CondDegraded)
	if deg == nil || deg.Status != metav1.ConditionTrue || !strings.Contains(deg.Message, "node k2") ||
		!strings.Contains(deg.Message, "clock differs from the operator's") || strings.Contains(deg.Message, "node k1") {
		t.Fatalf("Degraded = %+v", deg)
	}
	if cn.Status.Change.T0 != nil || cn.Status.Applied.MTU != 1450 {
		t.Fatalf("a failed precondition must stop the change before T0: %+v, applied %d", cn.Status.Change, cn.Status.Applied.MTU)
	}
	for _, n := range []string{"k1", "k2"} {
		var nns v1alpha1.NetshiftNodeState
		_ = cl.c.Get(cl.ctx, client.ObjectKey{Name: n}, &nns)
		if node := cl.node(n); nns.Spec.LiveChange != nil || node.Spec.Unschedulable || node.Annotations[hold.NodeAnnotation] != "" {
			t.Errorf("node %s: plan %+v, cordoned %v, hold %q: nothing may be left of a failed change", n, nns.Spec.LiveChange, node.Spec.Unschedulable, node.Annotations[hold.NodeAnnotation])
		}
		// k2's failure ends the change at once; k1 may not have answered by then (under load its
		// clock check takes more rounds). If it did, its answer carries what it measured.
		if n == "k1" && nns.Status.LiveChange != nil && nns.Status.LiveChange.ClockOffsetMicros == nil {
			t.Errorf("node k1 answered without its measured clock offset: %+v", nns.Status.LiveChange)
		}
	}
	noClusterPlan(t, cl, "a failed change")
}

// noClusterPlan fails the test if the cluster's live change plan is left.
func noClusterPlan(t *testing.T, cl *cluster, what string) {
	t.Helper()
	var plan v1alpha1.NetshiftChangePlan
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan); !apierrors.IsNotFound(err) {
		t.Errorf("%s: the cluster's plan %+v is left (%v)", what, plan.Spec, err)
	}
}

// startOperator runs the operator, with its time endpoint, until the test
// ends; bound gets the endpoint's address once it is elected.
func startOperator(t *testing.T, cl *cluster) (ctx context.Context, bound chan string) {
	t.Helper()
	ctx, bound, _ = startReplica(t, cl, "")
	return ctx, bound
}

// startReplica runs an operator replica advertising its time endpoint at
// advertised ("": none) until stop, or the test's end; set changes its options.
func startReplica(t *testing.T, cl *cluster, advertised string, set ...func(*operator.Options)) (ctx context.Context, bound chan string, stop func()) {
	t.Helper()
	bound = make(chan string, 1)
	ctx, cancel := context.WithCancel(cl.ctx)
	o := operator.Options{MetricsAddr: "0", HealthAddr: "0",
		LeaderElection: true, LeaderElectionID: "netshift-operator", LeaderElectionNS: operator.Namespace,
		EvictionRetry: 200 * time.Millisecond, Registry: prometheus.NewRegistry(), ManyInProcess: true,
		TimeAddr: "127.0.0.1:0", TimeBound: bound, TimeAdvertiseURL: advertised, ChangeRetry: time.Hour}
	for _, f := range set {
		f(&o)
	}
	mgr, err := operator.NewManager(ctx, env.OperatorConfig(), o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return ctx, bound, stop
}

// aChangeNobodyAnswers has replica A, advertising http://replica-a.invalid/time,
// lead a cluster of two nodes with no agents, and asks their MTU from 1450 to
// 1400: the change stays in its preconditions. stop ends replica A.
func aChangeNobodyAnswers(t *testing.T) (cl *cluster, cn *v1alpha1.NetshiftNetwork, stop func()) {
	cl = newCluster(t)
	_, bound, stop := startReplica(t, cl, "http://replica-a.invalid/time")
	timeEndpoint(t, bound)
	cl.createNodes("k1", "k2")
	cn = createNetwork(t, cl, 1450)
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To[int32](1400) })
	return cl, cn, stop
}

// TestANewLeaderChecksThePreconditionsAgainstItsClock: the operator that
// planned a change stops during its preconditions, and another replica takes
// the lease. The plan names the first one's time endpoint, which serves no
// more, and answers measured against its clock do not bound the nodes' clocks
// to the new leader's, on which T0 is set: the new leader starts the next
// attempt of the same change, whose plan names its own endpoint.
func TestANewLeaderChecksThePreconditionsAgainstItsClock(t *testing.T) {
	cl, cn, stop := aChangeNobodyAnswers(t)
	var plan v1alpha1.NetshiftChangePlan
	planned := func(what, timeURL string) v1alpha1.LiveChangePlan {
		t.Helper()
		cl.eventually(30*time.Second, what, func() bool {
			return cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan) == nil && plan.Spec.TimeURL == timeURL
		})
		return plan.Spec
	}
	first := planned("the first leader's plan", "http://replica-a.invalid/time")
	stop()
	_, bound, _ := startReplica(t, cl, "http://replica-b.invalid/time")
	timeEndpoint(t, bound)
	again := planned("the new leader's plan", "http://replica-b.invalid/time")
	if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn); err != nil {
		t.Fatal(err)
	}
	ch := cn.Status.Change
	if first.ID != "mtu-2-1" || again.ID != "mtu-2-2" || ch == nil || ch.ID != again.ID || ch.Attempt != 2 || ch.Phase != v1alpha1.PhasePreconditions {
		t.Fatalf("plans %s then %s, change %+v: want attempt 2 of the same change, checking its preconditions", first.ID, again.ID, ch)
	}
	if again.WrittenAt == nil || first.WrittenAt == nil || !again.WrittenAt.After(first.WrittenAt.Time) {
		t.Errorf("the new attempt's plan was written at %v, the first's at %v: the agents would measure its delivery from the first's", again.WrittenAt, first.WrittenAt)
	}
	first.ID, first.TimeURL, first.WrittenAt = again.ID, again.TimeURL, again.WrittenAt
	if !equality.Semantic.DeepEqual(first, again) || again.T0 != nil {
		t.Errorf("the new attempt's plan %+v differs from the first's %+v by more than its ID, time endpoint and time written", again, first)
	}
}

// TestAnAbortAskedWithNoLeaderIsHonouredByTheNext: the operator that planned
// a change stops during its preconditions; the abort is asked while no
// replica leads. The next leader aborts the change: it does not start the
// change's next attempt (which a new leader does for a change it finds in its
// preconditions, and which the abort, naming the first attempt, would not
// cover), and it withdraws the cluster's plan, so no agent keeps preparing.
func TestAnAbortAskedWithNoLeaderIsHonouredByTheNext(t *testing.T) {
	cl, cn, stop := aChangeNobodyAnswers(t)
	var plan v1alpha1.NetshiftChangePlan
	cl.eventually(30*time.Second, "the first leader's plan", func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan) == nil && plan.Spec.ID == "mtu-2-1"
	})
	stop()
	cl.update(cn, func(o client.Object) { o.SetAnnotations(map[string]string{operator.AbortAnnotation: "mtu-2-1"}) })
	_, bound, _ := startReplica(t, cl, "http://replica-b.invalid/time")
	timeEndpoint(t, bound)
	var ch *v1alpha1.NetworkChange
	cl.eventually(30*time.Second, "the change aborted by the new leader", func() bool {
		if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn); err != nil {
			return false
		}
		ch = cn.Status.Change
		return ch != nil && !ch.Phase.Active()
	}, func() string { return fmt.Sprintf("change %+v", ch) })
	if ch.ID != "mtu-2-1" || ch.Attempt != 1 || ch.Phase != v1alpha1.PhaseAborted {
		t.Errorf("change %s, attempt %d, phase %s (%s): want the first attempt aborted, no second one", ch.ID, ch.Attempt, ch.Phase, ch.Message)
	}
	err := cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan)
	if !apierrors.IsNotFound(err) {
		t.Errorf("the cluster's plan is still there (%v, plan %s): the agents would keep checking a change that was aborted", err, plan.Spec.ID)
	}
	if cn.Status.Applied == nil || cn.Status.Applied.MTU != 1450 {
		t.Errorf("applied %+v after the abort: want MTU 1450 as before", cn.Status.Applied)
	}
}

// TestTheAgentsAnswersAreSpreadAsAsked: the cluster's plan spreads the
// agents' clock checks (which end in their answers) and their steps' reports
// over --agent-write-spacing a node: 6 ms by default, less for a control plane
// that serves more writes a second.
func TestTheAgentsAnswersAreSpreadAsAsked(t *testing.T) {
	for _, c := range []struct {
		spacing time.Duration // 0: the default
		wantMs  int32
	}{{0, 3 * 6}, {2 * time.Millisecond, 3 * 2}} {
		t.Run(c.spacing.String(), func(t *testing.T) {
			cl := newCluster(t)
			startReplica(t, cl, "", func(o *operator.Options) { o.AgentWriteSpacing = c.spacing })
			_, plan := planAnMTUChange(t, cl, "k1", "k2", "k3")
			if plan.Spec.ClockSpreadMs != c.wantMs || plan.Spec.ReportSpreadMs != c.wantMs {
				t.Errorf("--agent-write-spacing %s, 3 nodes: clock checks over %d ms and reports over %d ms, want %d ms each",
					c.spacing, plan.Spec.ClockSpreadMs, plan.Spec.ReportSpreadMs, c.wantMs)
			}
		})
	}
}

// planAnMTUChange creates nodes with no agents and asks their MTU from 1450 to
// 1400, and returns the network and the cluster's plan once the operator wrote it.
func planAnMTUChange(t *testing.T, cl *cluster, nodes ...string) (*v1alpha1.NetshiftNetwork, v1alpha1.NetshiftChangePlan) {
	t.Helper()
	cl.createNodes(nodes...)
	cn := createNetwork(t, cl, 1450)
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To[int32](1400) })
	var plan v1alpha1.NetshiftChangePlan
	cl.eventually(30*time.Second, "the cluster's plan", func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan) == nil
	})
	return cn, plan
}

// TestT0IsAsFarAheadAsThePlanTookToArrive: every node answers with how long
// the cluster's plan took to reach it (the answers are written here, as the
// agents would), and the operator sets T0 twice the slowest of them ahead of
// its write, above its 2 s floor; the plan carries the time it was written,
// which the agents measure from.
func TestT0IsAsFarAheadAsThePlanTookToArrive(t *testing.T) {
	cl := newCluster(t)
	startOperator(t, cl)
	nodes := map[string]int32{"k1": 120, "k2": 1600, "k3": 300}
	cn, plan := planAnMTUChange(t, cl, "k1", "k2", "k3")
	if plan.Spec.WrittenAt == nil {
		t.Fatalf("the plan %+v carries no time it was written: the agents cannot measure how long it took to reach them", plan.Spec)
	}
	for node, ms := range nodes {
		nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(nns), nns); err != nil {
				return err
			}
			nns.Status.LiveChange = &v1alpha1.LiveChangeReport{ID: plan.Spec.ID, Ready: true, ClockOffsetMicros: ptr.To[int64](0), PlanReachedMs: ptr.To(ms)}
			return cl.c.Status().Update(cl.ctx, nns)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cl.eventually(30*time.Second, "the change scheduled", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Change != nil && cn.Status.Change.T0 != nil
	})
	if ch := cn.Status.Change; !strings.HasSuffix(ch.Message, ", 3.2s ahead") {
		t.Errorf("change %s: %q: want T0 3.2 s ahead, twice the 1.6 s node k2's plan took", ch.ID, ch.Message)
	}
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan); err != nil || plan.Spec.T0 == nil || !plan.Spec.T0.Equal(cn.Status.Change.T0) {
		t.Fatalf("the cluster's plan has T0 %v, the change %v (%v)", plan.Spec.T0, cn.Status.Change.T0, err)
	}
}

// startAgents runs an agent per node, each with its clock offset, until the test ends.
func startAgents(t *testing.T, ctx context.Context, timeAddr string, offsets map[string]time.Duration) {
	t.Helper()
	for node, offset := range offsets {
		startAgent(t, ctx, timeAddr, node, offset)
	}
}

// createNetwork creates the NetshiftNetwork at mtu and waits for the operator to record it applied.
func createNetwork(t *testing.T, cl *cluster, mtu int32) *v1alpha1.NetshiftNetwork {
	t.Helper()
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: ptr.To(mtu)}}
	if err := cl.c.Create(cl.ctx, cn); err != nil {
		t.Fatal(err)
	}
	cl.eventually(30*time.Second, "the applied values recorded", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Applied != nil
	})
	return cn
}

func timeEndpoint(t *testing.T, bound chan string) string {
	t.Helper()
	select {
	case addr := <-bound:
		return addr
	case <-time.After(30 * time.Second):
		t.Fatal("the time endpoint did not start (leader election?)")
	}
	return ""
}

// nodeOfItsOwn is the bridge driver on an in-process node: every agent of a
// test runs in the machine's namespace, whose tunnels (another test's) are
// not the node's to report.
type nodeOfItsOwn struct{ *ovsbridge.Node }

func (nodeOfItsOwn) Observe(context.Context, *v1alpha1.ObservedNetwork) error { return nil }

func ofItsOwn(e nodenet.Env) (netplugin.Node, error) { return nodeOfItsOwn{ovsbridge.NewNode(e)}, nil }

// nodeWithoutPods is a node whose runtime runs no pod: this test is about the
// operator and the clock check, not about pods.
type nodeWithoutPods struct{}

func (nodeWithoutPods) PodNetworks(context.Context) ([]nodenet.PodNetwork, []string, error) {
	return nil, nil, nil
}

// TestADryRunTouchesNothing: a dry run of an MTU change (spec.dryRun) goes to
// every node, waits for every answer even after one node's problem, ends
// Checked with each node's preconditions and what its steps would change,
// and leaves no plan, no cordon, the applied value and the spec's own MTU as
// they were; it runs once per edit, and a bad request is refused naming the
// field.
func TestADryRunTouchesNothing(t *testing.T) {
	cl := newCluster(t)
	ctx, bound := startOperator(t, cl)
	cl.createNodes("d1", "d2")
	addr := timeEndpoint(t, bound)
	startAgents(t, ctx, addr, map[string]time.Duration{"d1": 0, "d2": 200 * time.Millisecond})
	cn := createNetwork(t, cl, 1450)
	for _, bad := range []struct {
		req  v1alpha1.DryRunRequest
		says string
	}{
		{v1alpha1.DryRunRequest{MTU: ptr.To[int32](1400), VXLANPort: ptr.To[int32](4790)}, "exactly one of mtu, vxlanPort, genevePort"},
		{v1alpha1.DryRunRequest{}, "exactly one of mtu, vxlanPort, genevePort"},
		{v1alpha1.DryRunRequest{MTU: ptr.To[int32](1460)}, "spec.dryRun.mtu must be at most spec.underlay.mtu minus the tunnel overhead"},
		{v1alpha1.DryRunRequest{GenevePort: ptr.To[int32](0)}, "spec.dryRun.genevePort"},
	} {
		// Read fresh: the operator writes the status as the agents' reports come.
		edit := &v1alpha1.NetshiftNetwork{}
		if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), edit); err != nil {
			t.Fatal(err)
		}
		edit.Spec.DryRun = &bad.req
		if err := cl.c.Update(cl.ctx, edit); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("dry run %+v: %v, want a refusal saying %q", bad.req, err, bad.says)
		}
	}
	cl.update(cn, func(o client.Object) {
		o.(*v1alpha1.NetshiftNetwork).Spec.DryRun = &v1alpha1.DryRunRequest{MTU: ptr.To[int32](1400)}
	})
	cl.eventually(30*time.Second, "the dry run to be checked", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Change != nil && cn.Status.Change.DryRun && cn.Status.Change.Phase == v1alpha1.PhaseChecked
	})
	ch := cn.Status.Change
	if ch.Kind != v1alpha1.ChangeMTU || ch.From != 1450 || ch.To != 1400 || ch.Ready != 1 || ch.Failed != 1 ||
		!strings.Contains(ch.Message, "1 of 2 nodes would stop the change") || !strings.Contains(ch.Message, "node d2") || ch.T0 != nil {
		t.Fatalf("dry run = %+v", ch)
	}
	if *cn.Spec.MTU != 1450 || cn.Status.Applied.MTU != 1450 {
		t.Fatalf("a dry run changed the spec's MTU (%d) or the applied one (%d)", *cn.Spec.MTU, cn.Status.Applied.MTU)
	}
	if deg := meta.FindStatusCondition(cn.Status.Conditions, operator.CondDegraded); deg == nil || deg.Status != metav1.ConditionFalse {
		t.Errorf("a dry run's findings degraded the network: %+v", deg)
	}
	for _, n := range []string{"d1", "d2"} {
		var nns v1alpha1.NetshiftNodeState
		_ = cl.c.Get(cl.ctx, client.ObjectKey{Name: n}, &nns)
		rep := nns.Status.LiveChange
		if nns.Spec.LiveChange != nil || cl.node(n).Spec.Unschedulable {
			t.Errorf("node %s: plan %+v, cordoned %v: a dry run leaves nothing", n, nns.Spec.LiveChange, cl.node(n).Spec.Unschedulable)
		}
		if rep == nil || rep.ID != ch.ID || len(rep.WouldChange) == 0 || !strings.Contains(rep.WouldChange[0], "0 pods' eth0") {
			t.Errorf("node %s: report %+v, want what its steps would change", n, rep)
		}
		if ready := n == "d1"; rep != nil && rep.Ready != ready {
			t.Errorf("node %s: ready %v, want %v (%v)", n, rep.Ready, ready, rep.Problems)
		}
	}
	noClusterPlan(t, cl, "a dry run")
	// Once per edit: the operator does not run it again by itself.
	id := ch.ID
	time.Sleep(2 * time.Second)
	_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
	if cn.Status.Change.ID != id || cn.Status.Change.Phase != v1alpha1.PhaseChecked {
		t.Fatalf("the dry run ran again with no edit: %+v", cn.Status.Change)
	}
}

// TestTheNetworkIsCreatedFromTheNodes: with no NetshiftNetwork, the operator
// creates it from what every Ready Linux node's agent reports (a node that is
// down, or runs Windows, does not hold it back), and not while two nodes
// disagree (nothing is guessed).
func TestTheNetworkIsCreatedFromTheNodes(t *testing.T) {
	cl := newCluster(t)
	startOperator(t, cl)
	// o3 is down and o4 runs Windows: neither reports, and neither holds the network back.
	cl.createNodes("o1", "o2", "o3", "o4")
	for _, n := range []string{"o1", "o2", "o4"} {
		node := cl.node(n)
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if err := cl.c.Status().Update(cl.ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	cl.setReady("o3", false, time.Now())
	cl.update(cl.node("o4"), func(o client.Object) { o.SetLabels(map[string]string{corev1.LabelOSStable: "windows"}) })
	report := func(node string, mtu int32) {
		t.Helper()
		var nns v1alpha1.NetshiftNodeState
		cl.eventually(30*time.Second, "node "+node+"'s state", func() bool { return cl.c.Get(cl.ctx, client.ObjectKey{Name: node}, &nns) == nil })
		patch := client.MergeFrom(nns.DeepCopy())
		nns.Status.Network = &v1alpha1.ObservedNetwork{MTU: mtu, MTUFrom: "Pods", Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 8472,
			UnderlayInterface: "eth0", UnderlayMTU: 1500}
		if err := cl.c.Status().Patch(cl.ctx, &nns, patch); err != nil {
			t.Fatal(err)
		}
	}
	report("o1", 1450)
	report("o2", 1400)
	var cn v1alpha1.NetshiftNetwork
	time.Sleep(2 * time.Second)
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: "cluster"}, &cn); err == nil {
		t.Fatalf("created while the nodes disagree on the MTU: %+v", cn.Spec)
	}
	report("o2", 1450)
	cl.eventually(30*time.Second, "the NetshiftNetwork to be created", func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Applied != nil
	})
	if *cn.Spec.MTU != 1450 || cn.Spec.Encapsulation != v1alpha1.EncapVXLAN || cn.Spec.VXLANPort != 8472 || cn.Spec.Underlay.MTU != 1500 ||
		cn.Status.Applied.MTU != 1450 || cn.Status.Applied.VXLANPort != 8472 {
		t.Fatalf("created %+v, applied %+v; want MTU 1450 over VXLAN port 8472, underlay 1500", cn.Spec, cn.Status.Applied)
	}
}
