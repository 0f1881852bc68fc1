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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
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
	waitState := func(what string, ok func(*v1alpha1.NetshiftNodeState) bool) *v1alpha1.NetshiftNodeState {
		t.Helper()
		var got v1alpha1.NetshiftNodeState
		deadline := time.Now().Add(15 * time.Second)
		for {
			if err := c.Get(ctx, client.ObjectKey{Name: node}, &got); err != nil {
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
	got := waitState("the plan answered", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange != nil })
	if !got.Status.LiveChange.Ready || got.Status.Network != nil {
		t.Fatalf("before its steps: report %+v, network %+v; want it ready, no network reported during the plan", got.Status.LiveChange, got.Status.Network)
	}
	t0 := metav1.NewMicroTime(time.Now().Add(time.Second))
	got.Spec.LiveChange.T0 = &t0
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got = waitState("the node's part done", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange.Done })
	if got.Status.Network == nil {
		t.Errorf("the report saying Done carries no network: %+v", got.Status)
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

// nodeWithAgent creates a Node and runs its agent until the returned stop.
func nodeWithAgent(t *testing.T, node string) (stop func()) {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	return runAgent(t, Options{Node: node})
}
