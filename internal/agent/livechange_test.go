package agent

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/scheme"
	"netshift.io/netshift/internal/testenv"
)

// TestWithdrawnPlanDoesNotHoldTheAgent: an agent waits long for an operator
// time endpoint that does not answer (an operator restarting), but not for
// a plan that was withdrawn meanwhile: it answers the plan that replaced it
// at once, with its clock checked, and never the withdrawn one.
func TestWithdrawnPlanDoesNotHoldTheAgent(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	node := "clock-1"
	defer nodeWithAgent(t, node)()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/time"
	l.Close() // nobody answers there
	up := timeServer(t)

	plan := func(id, timeURL string) *v1alpha1.LiveChangePlan {
		return &v1alpha1.LiveChangePlan{ID: id, Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, TimeURL: timeURL}
	}
	nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NetshiftNodeStateSpec{LiveChange: plan("geneve-1-1", down)}}
	if err := c.Create(ctx, nns); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the agent is waiting for the endpoint
	nns.Spec.LiveChange = plan("geneve-1-2", up)
	if err := c.Update(ctx, nns); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.NetshiftNodeState
	deadline := time.Now().Add(15 * time.Second) // against the 90 s the withdrawn plan could have held it
	for {
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &got); err != nil {
			t.Fatal(err)
		}
		if r := got.Status.LiveChange; r != nil {
			if r.ID != "geneve-1-2" {
				t.Fatalf("the agent answered %s, a withdrawn plan: %+v", r.ID, r)
			}
			if !r.Ready || r.ClockOffsetMicros == nil {
				t.Fatalf("the new plan's report %+v: want it ready, its clock measured", r)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer to the new plan within 15 s: the withdrawn one still holds the agent")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAnotherDriversPlanIsRefused: a plan the operator made for another
// network plugin's driver fails the agent's preconditions, naming both.
func TestAnotherDriversPlanIsRefused(t *testing.T) {
	a := &Agent{Node: "node-1", PluginName: "ovs-bridge", now: time.Now}
	r := a.preconditions(context.Background(), &v1alpha1.LiveChangePlan{ID: "mtu-2-1", Kind: v1alpha1.ChangeMTU, From: 1400, To: 1300, Plugin: "ovn-kubernetes"})
	if r.Ready || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "ovn-kubernetes") || !strings.Contains(r.Problems[0], "ovs-bridge") {
		t.Fatalf("report %+v", r)
	}
}

// A node done with its steps reports its network in the same write: with the
// plan still there (the agent looks at its network only once it goes), the
// report that says Done already carries it.
func TestADoneNodeReportsItsNetworkWithItsSteps(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	node := "done-1"
	defer nodeWithAgent(t, node)()

	plan := &v1alpha1.LiveChangePlan{ID: "geneve-2-1", Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, TimeURL: timeServer(t)}
	nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NetshiftNodeStateSpec{LiveChange: plan}}
	if err := c.Create(ctx, nns); err != nil {
		t.Fatal(err)
	}
	got := waitNodeState(t, node, "the plan answered", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange != nil })
	if !got.Status.LiveChange.Ready || got.Status.Network != nil {
		t.Fatalf("before its steps: report %+v, network %+v; want it ready, no network reported during the plan", got.Status.LiveChange, got.Status.Network)
	}
	t0 := metav1.NewMicroTime(time.Now().Add(time.Second))
	got.Spec.LiveChange.T0 = &t0
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got = waitNodeState(t, node, "the node's part done", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange.Done })
	if got.Status.Network == nil {
		t.Errorf("the report saying Done carries no network: %+v", got.Status)
	}
}

// TestANodeRunsTheClustersPlanUnlessItHasItsOwn: every agent answers the
// one NetshiftChangePlan and runs its steps from the T0 written there; a node
// with a plan of its own (a rollback) runs that one instead, whatever the
// cluster's plan says.
func TestANodeRunsTheClustersPlanUnlessItHasItsOwn(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	defer nodeWithAgent(t, "follows-1")()
	defer nodeWithAgent(t, "own-1")()
	clock := timeServer(t)
	t0 := metav1.NewMicroTime(time.Now())
	own := &v1alpha1.LiveChangePlan{ID: "geneve-5-1-rollback", Kind: v1alpha1.ChangeGenevePort, From: 6082, To: 6081, Rollback: true, T0: &t0}
	for node, plan := range map[string]*v1alpha1.LiveChangePlan{"follows-1": nil, "own-1": own} {
		if err := c.Create(ctx, &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NetshiftNodeStateSpec{LiveChange: plan}}); err != nil {
			t.Fatal(err)
		}
	}
	cp := &v1alpha1.NetshiftChangePlan{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftChangePlanName},
		Spec: v1alpha1.LiveChangePlan{ID: "geneve-5-1", Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, TimeURL: clock}}
	if err := c.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(ctx, cp) }()
	report := func(node string, ok func(*v1alpha1.LiveChangeReport) bool) *v1alpha1.LiveChangeReport {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			var got v1alpha1.NetshiftNodeState
			if err := c.Get(ctx, client.ObjectKey{Name: node}, &got); err != nil {
				t.Fatal(err)
			}
			if r := got.Status.LiveChange; r != nil && ok(r) {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: report %+v", node, got.Status.LiveChange)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if r := report("follows-1", func(r *v1alpha1.LiveChangeReport) bool { return r.ID == "geneve-5-1" }); !r.Ready || r.ClockOffsetMicros == nil {
		t.Fatalf("the cluster's plan answered %+v: want it ready, the clock measured", r)
	}
	report("own-1", func(r *v1alpha1.LiveChangeReport) bool { return r.ID == own.ID && r.Ready })

	soon := metav1.NewMicroTime(time.Now().Add(time.Second))
	cp.Spec.T0 = &soon
	if err := c.Update(ctx, cp); err != nil {
		t.Fatal(err)
	}
	report("follows-1", func(r *v1alpha1.LiveChangeReport) bool { return r.ID == "geneve-5-1" && r.Done })
	time.Sleep(2 * time.Second) // past the cluster's T0
	if r := report("own-1", func(*v1alpha1.LiveChangeReport) bool { return true }); r.ID != own.ID {
		t.Fatalf("a node with its own plan answered the cluster's: %+v", r)
	}
}

// timeServer serves the operator's time endpoint until the test ends, and
// says where.
func timeServer(t *testing.T) string {
	clock := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]int64{"unixNano": time.Now().UnixNano()})
	}))
	t.Cleanup(clock.Close)
	return clock.URL + "/time"
}

// waitNodeState waits up to 15 s for the node's state to be as ok says.
func waitNodeState(t *testing.T, node, what string, ok func(*v1alpha1.NetshiftNodeState) bool) *v1alpha1.NetshiftNodeState {
	t.Helper()
	var got v1alpha1.NetshiftNodeState
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: node}, &got); err != nil {
			t.Fatal(err)
		}
		if ok(&got) {
			return &got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never; the state's status %+v", what, got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeWithAgent creates a Node and runs its agent until the returned stop.
func nodeWithAgent(t *testing.T, node string) (stop func()) {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	return runAgent(t, Options{Node: node})
}

// TestTheAnswerSaysHowLongThePlanTookToArrive: the agent answers a plan with
// how long after its writtenAt the plan reached it, on the operator's clock;
// a plan written before the agent started reached it by its start, not by
// its watch, and gets no such measure. That the measure ends when the agent
// took the plan up, not when it answered, is TestAPlanIsSeenOnce's.
func TestTheAnswerSaysHowLongThePlanTookToArrive(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	node := "reached-1"
	defer nodeWithAgent(t, node)()
	up := timeServer(t)
	answer := func(id string, writtenAt time.Time) *v1alpha1.LiveChangeReport {
		t.Helper()
		plan := &v1alpha1.LiveChangePlan{ID: id, Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, TimeURL: up, WrittenAt: ptr.To(metav1.NewMicroTime(writtenAt))}
		nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, nns, func() error { nns.Spec.LiveChange = plan; return nil }); err != nil {
			t.Fatal(err)
		}
		got := waitNodeState(t, node, "the answer to "+id, func(n *v1alpha1.NetshiftNodeState) bool {
			return n.Status.LiveChange != nil && n.Status.LiveChange.ID == id
		})
		return got.Status.LiveChange
	}
	// The agent's first pass runs once its caches synced: a plan written before it reached the agent by its start.
	if r := answer("geneve-1-1", time.Now().Add(-time.Hour)); !r.Ready || r.PlanReachedMs != nil {
		t.Fatalf("answer %+v: a plan written before the agent started says nothing of how plans reach it", r)
	}
	written := time.Now()
	r := answer("geneve-1-2", written)
	if !r.Ready || r.ClockOffsetMicros == nil || r.PlanReachedMs == nil || *r.PlanReachedMs > int32(time.Since(written).Milliseconds()) {
		t.Fatalf("answer %+v (reached %v): want it ready, with how long its plan took, no longer than since it was written", r, r.PlanReachedMs)
	}
	t.Logf("the plan reached the agent %d ms after it was written", *r.PlanReachedMs)
}

// TestStepsAreReportedAtTheNodesTurn: a node runs its steps at T0 and
// reports them at its moment in the plan's report spread (here its end), so
// that a cluster's agents do not all write at once; a failed step is
// reported at once, and so are steps whose plan a rollback replaced while
// their report waited, or whose agent was stopping.
func TestStepsAreReportedAtTheNodesTurn(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	clock := timeServer(t)
	last := func(spread time.Duration) time.Duration { return spread }
	step := v1alpha1.StepAction("TunnelPort")
	for _, tc := range []struct {
		name       string
		spread     time.Duration
		fail       bool
		interrupt  string        // a second after T0: "rollback" replaces the plan, "stop" stops the agent
		atLeast    time.Duration // after T0
		within     time.Duration // after T0
		wantFailed bool
	}{
		{name: "ran", spread: 3 * time.Second, atLeast: 3 * time.Second, within: 8 * time.Second},
		{name: "failed", spread: time.Minute, fail: true, within: 5 * time.Second, wantFailed: true},
		// The agent looks at its plan 1, 3 and 7 s into the wait.
		{name: "replaced", spread: time.Minute, interrupt: "rollback", within: 12 * time.Second},
		{name: "stopping", spread: time.Minute, interrupt: "stop", within: 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := "turn-" + tc.name
			if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
				t.Fatal(err)
			}
			o := Options{Node: node, drawTurn: last}
			// netshift's own step, which needs no network plugin on the node, or one made to fail.
			steps := []v1alpha1.ScheduledStep{{Action: v1alpha1.StepNetworkConfig, Value: 6082}}
			if tc.fail {
				o.FailStepOnce = []v1alpha1.StepAction{step}
				steps = []v1alpha1.ScheduledStep{{Action: step, Value: 6082}}
			}
			stop, stopped := runAgent(t, o), false
			defer func() {
				if !stopped {
					stop()
				}
			}()
			plan := &v1alpha1.LiveChangePlan{ID: "geneve-7-" + tc.name, Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082,
				TimeURL: clock, ReportSpreadMs: int32(tc.spread.Milliseconds()), Steps: steps,
				Network: &v1alpha1.NodeNetworkConfig{MTU: 1400, Encapsulation: v1alpha1.EncapGeneve, TunnelPort: 6082}}
			nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NetshiftNodeStateSpec{LiveChange: plan}}
			if err := c.Create(ctx, nns); err != nil {
				t.Fatal(err)
			}
			got := waitNodeState(t, node, "the plan answered", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange != nil })
			// Every version of the state, from here: a rollback's answer soon replaces the report.
			w := watchNodeState(t, node, got.ResourceVersion)
			t0 := time.Now().Add(time.Second)
			got.Spec.LiveChange.T0 = ptr.To(metav1.NewMicroTime(t0))
			if err := c.Update(ctx, got); err != nil {
				t.Fatal(err)
			}
			if tc.interrupt != "" {
				time.Sleep(time.Until(t0) + time.Second) // the steps ran; their report waits for its turn
			}
			if tc.interrupt == "stop" {
				stop()
				stopped = true
			}
			if tc.interrupt == "rollback" {
				rollback := &v1alpha1.LiveChangePlan{ID: plan.ID + "-rollback", Kind: plan.Kind, From: 6082, To: 6081, Rollback: true,
					T0: ptr.To(metav1.NewMicroTime(time.Now().Add(time.Hour)))}
				if err := c.Get(ctx, client.ObjectKey{Name: node}, got); err != nil {
					t.Fatal(err)
				}
				got.Spec.LiveChange = rollback
				if err := c.Update(ctx, got); err != nil {
					t.Fatal(err)
				}
			}
			got, at := firstNodeState(t, w, "the steps reported", func(s *v1alpha1.NetshiftNodeState) bool {
				r := s.Status.LiveChange
				return r != nil && r.ID == plan.ID && r.Done
			})
			after := at.Sub(t0)
			if after < tc.atLeast || after > tc.within {
				t.Errorf("the steps reported %s after T0; want from %s to %s (spread %s)", after.Round(time.Millisecond), tc.atLeast, tc.within, tc.spread)
			}
			if got.Status.LiveChange.Failed != tc.wantFailed {
				t.Errorf("report %+v: failed %v, want %v", got.Status.LiveChange, got.Status.LiveChange.Failed, tc.wantFailed)
			}
		})
	}
}

// watchNodeState watches the node's state from resourceVersion on, until the test ends.
func watchNodeState(t *testing.T, node, resourceVersion string) watch.Interface {
	t.Helper()
	wc, err := client.NewWithWatch(env.Admin, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.NetshiftNodeStateList{},
		client.MatchingFields{"metadata.name": node}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// firstNodeState is the first version of the node's state on w that is as ok says, and when
// it arrived; it waits up to 90 s.
func firstNodeState(t *testing.T, w watch.Interface, what string, ok func(*v1alpha1.NetshiftNodeState) bool) (*v1alpha1.NetshiftNodeState, time.Time) {
	t.Helper()
	timeout := time.After(90 * time.Second)
	var last *v1alpha1.NetshiftNodeState
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatalf("%s: the watch ended; the state's last status %+v", what, last)
			}
			if s, isState := ev.Object.(*v1alpha1.NetshiftNodeState); isState {
				if last = s; ok(s) {
					return s, time.Now()
				}
			}
		case <-timeout:
			t.Fatalf("%s: never; the state's last status %+v", what, last)
		}
	}
}
