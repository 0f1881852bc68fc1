package operator_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/operator"
)

// startOperatorFor runs the operator with lead as T0's least lead and
// answer as the answer timeout, reading the agent DaemonSet's placement.
func startOperatorFor(t *testing.T, cl *cluster, lead, answer time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(cl.ctx)
	mgr, err := operator.NewManager(ctx, env.OperatorConfig(), operator.Options{MetricsAddr: "0", HealthAddr: "0",
		LeaderElection: true, LeaderElectionID: "netshift-operator", LeaderElectionNS: operator.Namespace,
		EvictionRetry: 200 * time.Millisecond, AdmissionSettle: 300 * time.Millisecond, Registry: prometheus.NewRegistry(), ManyInProcess: true,
		TimeAddr: "0", ChangeLead: lead, StepSpacing: 50 * time.Millisecond, AnswerTimeout: answer, ChangeRetry: time.Hour,
		AgentDaemonSet: operator.Namespace + "/netshift-agent"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// report writes node's report of its live change (and the network it then
// observes, when given), as its agent would.
func (cl *cluster) report(node string, rep v1alpha1.LiveChangeReport, seen *v1alpha1.ObservedNetwork) {
	cl.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var nns v1alpha1.NetshiftNodeState
		if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: node}, &nns); err != nil {
			return err
		}
		nns.Status.LiveChange = rep.DeepCopy()
		if seen != nil {
			nns.Status.Network = seen.DeepCopy()
		}
		return cl.c.Status().Update(cl.ctx, &nns)
	})
	if err != nil {
		cl.t.Fatalf("node %s: report %+v: %v", node, rep, err)
	}
}

// stepsDone is a node's report of change id with every step done.
func stepsDone(id string) v1alpha1.LiveChangeReport {
	at := metav1.NewMicroTime(time.Now())
	return v1alpha1.LiveChangeReport{ID: id, Ready: true, Done: true, Steps: []v1alpha1.StepResult{{Action: "PodMTU", At: at}, {Action: v1alpha1.StepNetworkConfig, At: at}}}
}

// waitChangeOf waits for the network's change to satisfy cond and returns it.
func (cl *cluster) waitChangeOf(what string, cond func(*v1alpha1.NetshiftNetwork) bool) *v1alpha1.NetshiftNetwork {
	cl.t.Helper()
	var cn v1alpha1.NetshiftNetwork
	cl.eventually(60*time.Second, what, func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn) == nil && cn.Status.Change != nil && cond(&cn)
	}, func() string {
		if cn.Status.Change == nil {
			return "no change"
		}
		ch := cn.Status.Change
		return string(ch.Phase) + ": " + ch.Message
	})
	return &cn
}

// answerReady answers change id's preconditions on the nodes, ready.
func (cl *cluster) answerReady(id string, nodes ...string) {
	cl.t.Helper()
	for _, n := range nodes {
		cl.report(n, v1alpha1.LiveChangeReport{ID: id, Ready: true}, nil)
	}
}

func (cl *cluster) editMTU(mtu int32) {
	cl.t.Helper()
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}}
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To(mtu) })
}

// TestAChangeGoesAheadWithoutNodesThatCannotAnswer: a Windows node, a node
// outside the agent DaemonSet's placement and a node NotReady for five
// minutes are in the cluster. An MTU change runs on the two others alone and
// succeeds, naming the first two outside and the third down; a second change
// runs while it is still down (the API takes the edit). Back Ready, the down
// node, whose agent reports the MTU it had, gets a catch-up plan of its own
// to the applied MTU, and leaves the down list once it reports it carries it.
func TestAChangeGoesAheadWithoutNodesThatCannotAnswer(t *testing.T) {
	cl := newCluster(t)
	cl.wipe() // nodes other tests left (their Ready condition unset) would be waited for
	startOperatorFor(t, cl, time.Second, time.Minute)
	cl.createNodes("k1", "k2", "win-1", "gpu-1", "down-1")
	cl.update(cl.node("win-1"), func(o client.Object) { o.SetLabels(map[string]string{corev1.LabelOSStable: "windows"}) })
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "netshift-agent", Namespace: operator.Namespace}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent", Image: "netshift"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"gpu-1"}}}}}}}},
		}}}}
	if err := cl.c.Create(cl.ctx, ds); err != nil {
		t.Fatal(err)
	}
	cl.setReady("down-1", false, time.Now().Add(-5*time.Minute))
	createNetwork(t, cl, 1450)

	cl.editMTU(1400)
	cn := cl.waitChangeOf("the change to wait for k1 and k2 alone", func(cn *v1alpha1.NetshiftNetwork) bool {
		return cn.Status.Change.Phase == v1alpha1.PhasePreconditions && cn.Status.Change.Nodes == 2
	})
	id := cn.Status.Change.ID
	cl.answerReady(id, "k1", "k2")
	cl.waitChangeOf("T0", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.T0 != nil })
	cl.report("k1", stepsDone(id), nil)
	cl.report("k2", stepsDone(id), nil)
	cn = cl.waitChangeOf("the change to end", func(cn *v1alpha1.NetshiftNetwork) bool { return !cn.Status.Change.Phase.Active() })
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseSucceeded || cn.Status.Applied.MTU != 1400 || !slices.Equal(ch.Outside, []string{"gpu-1", "win-1"}) ||
		!slices.Equal(ch.Down, []string{"down-1"}) || len(ch.Converging) != 0 {
		t.Fatalf("change %+v, applied %+v: want it Succeeded on k1 and k2, gpu-1 and win-1 outside, down-1 down", ch, cn.Status.Applied)
	}
	if deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded); deg == nil || deg.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v", deg)
	}
	if cl.node("down-1").Spec.Unschedulable {
		t.Error("down-1 cordoned: a node that is down needs none (its taints keep pods off), and takes no pool slot")
	}

	// A later change does not wait on the node that is still down.
	cl.editMTU(1350)
	cn = cl.waitChangeOf("the second change to wait for k1 and k2", func(cn *v1alpha1.NetshiftNetwork) bool {
		return cn.Status.Change.ID != id && cn.Status.Change.Phase == v1alpha1.PhasePreconditions && cn.Status.Change.Nodes == 2
	})
	id = cn.Status.Change.ID
	cl.answerReady(id, "k1", "k2")
	cl.waitChangeOf("T0", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.T0 != nil })
	cl.report("k1", stepsDone(id), nil)
	cl.report("k2", stepsDone(id), nil)
	cn = cl.waitChangeOf("the second change to end", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.Phase == v1alpha1.PhaseSucceeded })
	if !slices.Equal(cn.Status.Change.Down, []string{"down-1"}) || cn.Status.Applied.MTU != 1350 {
		t.Fatalf("second change %+v, applied %+v", cn.Status.Change, cn.Status.Applied)
	}

	// down-1 is back, at the MTU it had: it catches up alone.
	cl.report("down-1", v1alpha1.LiveChangeReport{}, &v1alpha1.ObservedNetwork{MTU: 1450, Encapsulation: "vxlan", TunnelPort: 4789})
	cl.setReady("down-1", true, time.Now())
	var nns v1alpha1.NetshiftNodeState
	cl.eventually(60*time.Second, "down-1's catch-up plan", func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: "down-1"}, &nns) == nil && nns.Spec.LiveChange != nil
	})
	plan := nns.Spec.LiveChange
	if plan.ID != "catchup-mtu-1350" || plan.From != 1450 || plan.To != 1350 || plan.T0 == nil || plan.Network == nil || plan.Network.MTU != 1350 ||
		plan.ConfirmWindowMs != 0 {
		t.Fatalf("down-1's plan %+v: want a catch-up 1450 -> 1350 with T0 and the applied network", plan)
	}
	cl.report("down-1", stepsDone(plan.ID), &v1alpha1.ObservedNetwork{MTU: 1350, Encapsulation: "vxlan", TunnelPort: 4789})
	cn = cl.waitChangeOf("down-1 to leave the down list", func(cn *v1alpha1.NetshiftNetwork) bool { return len(cn.Status.Change.Down) == 0 })
	if !strings.Contains(cn.Status.Change.Message, "node down-1 is back at the applied values") {
		t.Errorf("message %q", cn.Status.Change.Message)
	}
	cl.eventually(30*time.Second, "down-1's catch-up plan removed", func() bool {
		return cl.c.Get(cl.ctx, client.ObjectKey{Name: "down-1"}, &nns) == nil && nns.Spec.LiveChange == nil
	})
}

// TestLateReportsMakeTheRecordTrue: every agent is silent past the answer
// timeout after T0 (as when the control plane is away). The change ends
// Failed with the three converging, status.applied at the new MTU they move
// to, and only one of them cordoned (the default pool allows one). When they
// report their steps, late, the change is Succeeded naming them late, and
// no cordon is left.
func TestLateReportsMakeTheRecordTrue(t *testing.T) {
	cl := newCluster(t)
	cl.wipe() // nodes other tests left (their Ready condition unset) would be waited for
	startOperatorFor(t, cl, time.Second, 3*time.Second)
	nodes := []string{"k1", "k2", "k3"}
	cl.createNodes(nodes...)
	createNetwork(t, cl, 1450)
	cl.editMTU(1400)
	cn := cl.waitChangeOf("the plan", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.Phase == v1alpha1.PhasePreconditions })
	id := cn.Status.Change.ID
	cl.answerReady(id, nodes...)
	cn = cl.waitChangeOf("the change to give up on its silent nodes", func(cn *v1alpha1.NetshiftNetwork) bool { return !cn.Status.Change.Phase.Active() })
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseFailed || !slices.Equal(ch.Converging, nodes) || cn.Status.Applied.MTU != 1400 {
		t.Fatalf("change %+v, applied %+v: want Failed, every node converging to 1400, which is what is applied", ch, cn.Status.Applied)
	}
	cordoned := 0
	cl.eventually(10*time.Second, "a silent node cordoned", func() bool {
		cordoned = 0
		for _, n := range nodes {
			if cl.node(n).Spec.Unschedulable {
				cordoned++
			}
		}
		return cordoned > 0
	})
	if cordoned != 1 {
		t.Fatalf("%d silent nodes cordoned: the default pool allows 1 at once", cordoned)
	}
	for _, n := range nodes {
		cl.report(n, stepsDone(id), nil)
	}
	cn = cl.waitChangeOf("the change to succeed, late", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.Phase == v1alpha1.PhaseSucceeded })
	ch = cn.Status.Change
	if !slices.Equal(ch.Late, nodes) || len(ch.Converging) != 0 || !strings.Contains(ch.Message, "k1, k2, k3 late") || cn.Status.Applied.MTU != 1400 {
		t.Fatalf("change %+v, applied %+v", ch, cn.Status.Applied)
	}
	if deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded); deg == nil || deg.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v", deg)
	}
	cl.eventually(30*time.Second, "no cordon left", func() bool {
		for _, n := range nodes {
			if node := cl.node(n); node.Spec.Unschedulable || node.Annotations[hold.NodeAnnotation] != "" {
				return false
			}
		}
		return true
	})
}

// TestStepsOfAnAbortedChangeAreRolledBack: a change is aborted before T0,
// and one node, whose agent could not see the abort in time, reports that it
// ran a step of it all the same. The operator names it, gives it a rollback
// of its own, Degraded says so while it runs, and the change stays Aborted
// once the node reports it rolled back.
func TestStepsOfAnAbortedChangeAreRolledBack(t *testing.T) {
	cl := newCluster(t)
	cl.wipe() // nodes other tests left (their Ready condition unset) would be waited for
	startOperatorFor(t, cl, 20*time.Second, time.Minute)
	cl.createNodes("k1", "k2")
	createNetwork(t, cl, 1450)
	cl.editMTU(1400)
	cn := cl.waitChangeOf("the plan", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.Phase == v1alpha1.PhasePreconditions })
	id := cn.Status.Change.ID
	cl.answerReady(id, "k1", "k2")
	cl.waitChangeOf("T0", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.T0 != nil })
	// As `netshift abort` does: the annotation, then the spec put back once the change is aborted.
	cl.update(cn, func(o client.Object) { o.SetAnnotations(map[string]string{operator.AbortAnnotation: id}) })
	cl.waitChangeOf("the abort", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.Phase == v1alpha1.PhaseAborted })
	cl.update(cn, func(o client.Object) {
		o.SetAnnotations(nil)
		o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To[int32](1450)
	})
	cl.report("k2", v1alpha1.LiveChangeReport{ID: id, Ready: true, Steps: []v1alpha1.StepResult{{Action: "PodMTU", At: metav1.NewMicroTime(time.Now())}}}, nil)
	cn = cl.waitChangeOf("k2 rolled back", func(cn *v1alpha1.NetshiftNetwork) bool { return len(cn.Status.Change.Converging) == 1 })
	if ch := cn.Status.Change; ch.Phase != v1alpha1.PhaseAborted || !strings.Contains(ch.Message, "node k2 ran PodMTU") {
		t.Fatalf("change %+v", ch)
	}
	if deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded); deg == nil || deg.Status != metav1.ConditionTrue {
		t.Errorf("Degraded %+v while k2 is off the others", deg)
	}
	var nns v1alpha1.NetshiftNodeState
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: "k2"}, &nns); err != nil || nns.Spec.LiveChange == nil || nns.Spec.LiveChange.ID != id+"-rollback" ||
		nns.Spec.LiveChange.To != 1450 || nns.Spec.LiveChange.T0 == nil {
		t.Fatalf("k2's plan %+v (%v): want the rollback to 1450", nns.Spec.LiveChange, err)
	}
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: "k1"}, &nns); err != nil || nns.Spec.LiveChange != nil {
		t.Fatalf("k1's plan %+v (%v): it ran nothing and has nothing to roll back", nns.Spec.LiveChange, err)
	}
	cl.report("k2", stepsDone(id+"-rollback"), nil)
	cn = cl.waitChangeOf("k2 back", func(cn *v1alpha1.NetshiftNetwork) bool { return len(cn.Status.Change.Converging) == 0 })
	if ch := cn.Status.Change; ch.Phase != v1alpha1.PhaseAborted || !strings.Contains(ch.Message, "rolled back the steps it ran after the abort") ||
		cn.Status.Applied.MTU != 1450 {
		t.Fatalf("change %+v, applied %+v", ch, cn.Status.Applied)
	}
}

// TestAnAgentRestartedBeforeT0ChecksItsClockAgain: k1's agent (a real one)
// answers an MTU change ready, T0 15 s ahead, and is restarted meanwhile on
// a clock now 200 ms ahead of the operator's: it measures again before its
// steps, answers the problem and runs none. k2 (answered here) applies the
// change; it ends Failed, not Succeeded, with k1 held for a person and named.
func TestAnAgentRestartedBeforeT0ChecksItsClockAgain(t *testing.T) {
	cl := newCluster(t)
	cl.wipe()
	ctx, bound, _ := startReplica(t, cl, "", func(o *operator.Options) { o.ChangeLead = 15 * time.Second })
	cl.createNodes("k1", "k2")
	addr := timeEndpoint(t, bound)
	stopK1 := startAgent(t, ctx, addr, "k1", 0)
	createNetwork(t, cl, 1450)
	cl.editMTU(1400)
	cn := cl.waitChangeOf("the plan", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.Phase == v1alpha1.PhasePreconditions })
	id := cn.Status.Change.ID
	cl.answerReady(id, "k2")
	cn = cl.waitChangeOf("T0", func(cn *v1alpha1.NetshiftNetwork) bool { return cn.Status.Change.T0 != nil })
	stopK1()
	startAgent(t, ctx, addr, "k1", 200*time.Millisecond)
	time.Sleep(time.Until(cn.Status.Change.T0.Time))
	cl.report("k2", stepsDone(id), nil)
	cn = cl.waitChangeOf("the change to end", func(cn *v1alpha1.NetshiftNetwork) bool { return !cn.Status.Change.Phase.Active() })
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseFailed || !slices.Equal(ch.Held, []string{"k1"}) || !strings.Contains(ch.Message, "restarted after answering, the node's clock now differs") {
		t.Fatalf("change %+v: want Failed, k1 held for its clock", ch)
	}
	var nns v1alpha1.NetshiftNodeState
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: "k1"}, &nns); err != nil || nns.Status.LiveChange == nil || len(nns.Status.LiveChange.Steps) != 0 {
		t.Fatalf("k1's report %+v (%v): it must run no step", nns.Status.LiveChange, err)
	}
}

// startAgent runs node's agent with its clock offset until stop or the test's end.
func startAgent(t *testing.T, ctx context.Context, timeAddr, node string, offset time.Duration) (stop func()) {
	t.Helper()
	m, err := agent.NewManager(env.AgentConfig(node), agent.Options{Node: node, HealthAddr: "0", ManyInProcess: true,
		OperatorTimeURL: "http://" + timeAddr + "/time", ClockOffset: offset, Pods: nodeWithoutPods{}, NewPlugin: ofItsOwn})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Start(actx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}
