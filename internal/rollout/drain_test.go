package rollout

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func req(op string, st v1alpha1.DrainRequestState) *v1alpha1.DrainRequest {
	return &v1alpha1.DrainRequest{Operation: op, State: st}
}

func TestDecideNode(t *testing.T) {
	started := metav1.NewTime(t0.Add(-time.Hour))
	fresh := metav1.NewTime(t0.Add(-time.Second))
	cases := []struct {
		name   string
		status v1alpha1.NetshiftNodeStateStatus
		pods   int
		policy DrainPolicy
		want   Action // "" = nothing to do
		to     v1alpha1.DrainStatus
	}{
		{"idle, no request", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle}, 0, DefaultDrainPolicy, "", ""},
		{"empty status, request", v1alpha1.NetshiftNodeStateStatus{DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, ActionQueue, v1alpha1.DrainRequired},
		{"idle, same op already drained", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, "", ""},
		{"idle, op whose drain failed", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainFailure: &v1alpha1.DrainFailure{Operation: "op2"}, DrainRequest: req("op2", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, "", ""},
		{"idle, new op", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainOperation: "op1", DrainRequest: req("op2", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, ActionQueue, v1alpha1.DrainRequired},
		{"required, request withdrawn", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestIdle)}, 0, DefaultDrainPolicy, ActionCancel, v1alpha1.DrainIdle},
		{"required, waits", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, "", ""},
		{"draining, pods left", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "op1", DrainStartedAt: &fresh, DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 2, DefaultDrainPolicy, ActionEvict, v1alpha1.Draining},
		{"draining, none left", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "op1", DrainStartedAt: &fresh, DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, ActionComplete, v1alpha1.DrainingComplete},
		{"draining past timeout, wait", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "op1", DrainStartedAt: &started, DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 1, DefaultDrainPolicy, ActionTimeoutWait, v1alpha1.Draining},
		{"draining past timeout, fail", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "op1", DrainStartedAt: &started, DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 1, DrainPolicy{Timeout: time.Minute, OnTimeout: v1alpha1.DrainTimeoutFail}, ActionTimeoutFail, v1alpha1.DrainIdle},
		{"complete, agent still working", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, "", ""},
		{"complete, agent done", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestIdle)}, 0, DefaultDrainPolicy, ActionRelease, v1alpha1.DrainIdle},
		{"complete, stale Idle for an older op keeps the slot", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op2", DrainRequest: req("op2", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, "", ""},
		{"disabled, agent done", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainDisabled, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestIdle)}, 0, DefaultDrainPolicy, ActionRelease, v1alpha1.DrainIdle},
		{"MCP paused (external hook) holds its slot", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingMCPPaused, DrainOperation: "op1", DrainRequest: req("op1", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, "", ""},
		{"legacy adopted drain released by the agent", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: v1alpha1.LegacyDrainOperation, DrainRequest: req(v1alpha1.LegacyDrainOperation, v1alpha1.DrainRequestIdle)}, 3, DefaultDrainPolicy, ActionRelease, v1alpha1.DrainIdle},
		{"adopted legacy drain waits for the agent", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: v1alpha1.LegacyDrainOperation}, 0, DefaultDrainPolicy, "", ""},
		{"slot holder whose agent moved to another op", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: req("op9", v1alpha1.DrainRequestRequired)}, 0, DefaultDrainPolicy, ActionRelease, v1alpha1.DrainIdle},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := decideNode(NodeDrain{Name: "n", Status: c.status, PodsLeft: c.pods}, c.policy, t0)
			if !ok {
				d = Decision{}
			}
			if d.Action != c.want || d.To != c.to {
				t.Fatalf("decision = %s -> %q, want %s -> %q", d.Action, d.To, c.want, c.to)
			}
		})
	}
}

func TestDecideDrainsExample(t *testing.T) {
	m := Resolve(nodes("A", "B", "C", "D", "E"), examplePools(t))
	var ns []NodeDrain
	for _, n := range []string{"C", "D", "E"} {
		ns = append(ns, NodeDrain{Name: n, Status: v1alpha1.NetshiftNodeStateStatus{
			DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}})
	}
	got := DecideDrains(m, ns, DefaultDrainPolicy, t0)
	var admitted []string
	for _, d := range got {
		if d.Action == ActionAdmit {
			admitted = append(admitted, d.Node)
		}
	}
	if fmt.Sprint(admitted) != "[C D E]" {
		t.Fatalf("admitted %v, want [C D E] at once", admitted)
	}
}

func TestReleaseFreesSlotInSamePass(t *testing.T) {
	m := Resolve(nodes("a", "b"), []Pool{pool(t, "p", 1, intstr.FromInt32(1))})
	ns := []NodeDrain{
		{Name: "a", Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestIdle)}},
		{Name: "b", Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}},
	}
	got := DecideDrains(m, ns, DefaultDrainPolicy, t0)
	if len(got) != 2 || got[0].Action != ActionRelease || got[0].Node != "a" || got[1].Action != ActionAdmit || got[1].Node != "b" {
		t.Fatalf("decisions = %+v, want release a, then admit b", got)
	}
}

// TestANodeBusyWithAZoneMoveCountsAgainstThePool: a zone move holds a slot
// too. Another node's drain waits for it; the moving node's own drain goes
// at once, in the slot it holds.
func TestANodeBusyWithAZoneMoveCountsAgainstThePool(t *testing.T) {
	m := Resolve(nodes("a", "b"), []Pool{pool(t, "p", 1, intstr.FromInt32(1))})
	waiting := v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}
	got := DecideDrains(m, []NodeDrain{{Name: "a", Busy: true}, {Name: "b", Status: waiting}}, DefaultDrainPolicy, t0)
	if len(got) != 0 {
		t.Fatalf("decisions = %+v, want none: a's move holds the pool's one slot", got)
	}
	got = DecideDrains(m, []NodeDrain{{Name: "a", Busy: true, Status: waiting}, {Name: "b", Status: waiting}}, DefaultDrainPolicy, t0)
	if len(got) != 1 || got[0].Action != ActionAdmit || got[0].Node != "a" {
		t.Fatalf("decisions = %+v, want a admitted in the slot its move holds, b waiting", got)
	}
}

func TestDrainDisabledAdmitsToDrainDisabled(t *testing.T) {
	m := Resolve(nodes("a", "b"), nil)
	ns := []NodeDrain{
		{Name: "a", Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}},
		{Name: "b", Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}},
	}
	got := DecideDrains(m, ns, DrainPolicy{Disabled: true}, t0)
	if len(got) != 1 || got[0].To != v1alpha1.DrainDisabled || got[0].Node != "a" {
		t.Fatalf("decisions = %+v, want only a admitted to Drain_Disabled (default pool: 1 at a time)", got)
	}
}

// TestPropertyLimitsHoldAndEveryNodeFinishes drives the core with random
// clusters, pools, limits and agent timings, applying each pass's decisions as
// the controller would, and checks the two invariants: a pool never has more
// nodes holding a slot than its limit, and every node that asks finishes.
func TestPropertyLimitsHoldAndEveryNodeFinishes(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nNodes := 1 + rng.IntN(40)
		var ns []Node
		for i := range nNodes {
			ns = append(ns, Node{Name: fmt.Sprintf("n%02d", i), Labels: map[string]string{"g": fmt.Sprint(rng.IntN(4))}})
		}
		var ps []Pool
		for i := range rng.IntN(5) {
			var mp intstr.IntOrString
			if rng.IntN(2) == 0 {
				mp = intstr.FromInt32(int32(rng.IntN(4)))
			} else {
				mp = intstr.FromString(fmt.Sprintf("%d%%", 1+rng.IntN(100)))
			}
			ps = append(ps, pool(t, fmt.Sprintf("p%d", i), int32(rng.IntN(3)), mp, labelIn("g", fmt.Sprint(rng.IntN(4)), fmt.Sprint(rng.IntN(4)))))
		}
		m := Resolve(ns, ps)
		policy := DrainPolicy{Disabled: rng.IntN(4) == 0}
		state := map[string]*NodeDrain{}
		for _, n := range ns {
			st := v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle}
			if rng.IntN(3) > 0 {
				st.DrainRequest = req("op", v1alpha1.DrainRequestRequired)
			}
			state[n.Name] = &NodeDrain{Name: n.Name, Status: st, PodsLeft: rng.IntN(3)}
		}
		for pass := 0; pass < 10*nNodes+20; pass++ {
			var in []NodeDrain
			for _, n := range state {
				in = append(in, *n)
			}
			for _, d := range DecideDrains(m, in, policy, t0) {
				n := state[d.Node]
				n.Status.DrainStatus = d.To
				if d.Action == ActionQueue {
					n.Status.DrainOperation = d.Operation
				}
				if d.Action == ActionEvict {
					n.PodsLeft--
				}
			}
			holding := map[string]int{}
			for _, n := range state {
				if HoldsSlot(n.Status.DrainStatus) {
					holding[m.Owner[n.Name]]++
				}
				// The agent works once drained (or drain disabled), at random speed.
				s := n.Status.DrainStatus
				if (s == v1alpha1.DrainingComplete || s == v1alpha1.DrainDisabled) && rng.IntN(2) == 0 {
					n.Status.DrainRequest.State = v1alpha1.DrainRequestIdle
				}
			}
			for p, h := range holding {
				if lim := m.Limit[p]; lim > 0 && h > lim {
					t.Fatalf("seed %d pass %d: pool %s has %d nodes holding a slot, limit %d", seed, pass, p, h, lim)
				}
			}
		}
		for _, n := range state {
			if n.Status.DrainRequest != nil && (n.Status.DrainStatus != v1alpha1.DrainIdle || n.Status.DrainRequest.State != v1alpha1.DrainRequestIdle) {
				t.Fatalf("seed %d: node %s never finished: %+v", seed, n.Name, n.Status)
			}
		}
	}
}

// TestSettleGrantsABurstInNameOrder: requests that reach a pool within the
// settle window are granted together, in name order, once the latest has
// waited Settle; an early asker gets no head start.
func TestSettleGrantsABurstInNameOrder(t *testing.T) {
	m := Resolve(nodes("a", "b", "c"), []Pool{pool(t, "p", 1, intstr.FromInt32(2))})
	queued := func(name string, ago time.Duration) NodeDrain {
		at := metav1.NewTime(t0.Add(-ago))
		return NodeDrain{Name: name, Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op",
			DrainQueuedAt: &at, DrainRequest: req("op", v1alpha1.DrainRequestRequired)}}
	}
	policy := DefaultDrainPolicy
	policy.Settle = time.Second
	// c asked long ago, a and b just now: nothing yet.
	if got := DecideDrains(m, []NodeDrain{queued("c", time.Minute), queued("a", 100*time.Millisecond), queued("b", 0)}, policy, t0); len(got) != 0 {
		t.Fatalf("decisions while settling = %+v, want none", got)
	}
	// All settled: a and b, in name order, before c.
	got := DecideDrains(m, []NodeDrain{queued("c", time.Minute), queued("a", 2*time.Second), queued("b", time.Second)}, policy, t0)
	if len(got) != 2 || got[0].Node != "a" || got[1].Node != "b" {
		t.Fatalf("decisions = %+v, want a and b admitted", got)
	}
	// Other pools are not held back by a settling pool.
	m2 := Resolve(nodes("a", "x"), []Pool{pool(t, "p", 1, intstr.FromInt32(1), labelIn("k", "none")), pool(t, "q", 1, intstr.FromInt32(1), namesIn("x")...)})
	got = DecideDrains(m2, []NodeDrain{queued("a", 0), queued("x", time.Minute)}, policy, t0)
	if len(got) != 1 || got[0].Node != "x" {
		t.Fatalf("decisions = %+v, want x admitted while a's pool settles", got)
	}
}
