package zones

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/rollout"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		present bool
		data    map[string]string
		want    Config
		desired Mode
		errHas  string
	}{
		{present: false, want: Config{Mode: Multi, Definitive: true}, desired: Multi},
		{present: true, data: map[string]string{"zone-mode": "singlezone"}, want: Config{Present: true, Mode: Single, Definitive: true}, desired: Single},
		{present: true, data: map[string]string{"zone-mode": "singlezone", "definitive": "no"}, want: Config{Present: true, Mode: Single}, desired: Multi},
		{present: true, data: map[string]string{"zone-mode": "multizone", "definitive": "yes"}, want: Config{Present: true, Mode: Multi, Definitive: true}, desired: Multi},
		{present: true, data: map[string]string{}, errHas: "zone-mode: missing"},
		{present: true, data: map[string]string{"zone-mode": "zoned"}, errHas: `zone-mode: "zoned" is not singlezone or multizone`},
		{present: true, data: map[string]string{"zone-mode": "multizone", "definitive": "maybe"}, errHas: `definitive: "maybe" is not yes or no`},
		{present: true, data: map[string]string{"zone-mode": "multizone", "definitive": "no"}, errHas: "definitive: no is netshift's mark"},
		{present: true, data: map[string]string{"zone-mode": "multizone", "zones": "3"}, errHas: "unknown key(s) zones"},
	}
	for i, c := range cases {
		got, err := ParseConfig(c.present, c.data)
		if c.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("%d: error %v, want one containing %q", i, err, c.errHas)
			}
			continue
		}
		if err != nil || got != c.want || got.Desired() != c.desired {
			t.Errorf("%d: %+v %v (desired %s), want %+v (desired %s)", i, got, err, got.Desired(), c.want, c.desired)
		}
	}
}

func nodes(zones ...string) []Node {
	var out []Node
	for i, z := range zones {
		name := fmt.Sprintf("n%d", i+1)
		if z == "own" {
			z = name
		}
		out = append(out, Node{Name: name, Zone: z, Ready: true})
	}
	return out
}

func TestCurrent(t *testing.T) {
	for _, c := range []struct {
		nodes []Node
		want  Mode
	}{
		{nodes("", "", ""), Legacy},
		{nodes("global", "global"), Single},
		{nodes("own", "own", "own"), Multi},
		{nodes("global", "own"), Undefined},
		{nodes("global", ""), Undefined},
		{nodes("elsewhere", "own"), Undefined},
		{nil, Undefined},
		{nodes("global"), Single}, // one node: global is single zone...
	} {
		if got := Current(c.nodes); got != c.want {
			t.Errorf("%+v: %s, want %s", c.nodes, got, c.want)
		}
	}
}

func pools(t *testing.T, ns []Node, maxParallel int) rollout.Membership {
	t.Helper()
	var rn []rollout.Node
	for _, n := range ns {
		rn = append(rn, rollout.Node{Name: n.Name})
	}
	mp := intstr.FromInt32(int32(maxParallel))
	p, err := rollout.NewPool(&v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: v1alpha1.NetshiftNodePoolSpec{MaxParallel: &mp}})
	if err != nil {
		t.Fatal(err)
	}
	return rollout.Resolve(rn, []rollout.Pool{p})
}

// world is the cluster as the decisions act on it: moves land at once, the
// central side starts and stops, the ConfigMap is written and deleted.
type world struct {
	s      State
	events []string
}

func (w *world) step(t *testing.T) Decision {
	t.Helper()
	d := Decide(w.s)
	if d.WriteIntermediate {
		w.s.Config = Config{Present: true, Mode: Single, Definitive: false}
		w.events = append(w.events, "write intermediate ConfigMap")
	}
	switch d.Central {
	case CentralEnsure:
		w.s.Central = CentralRunning
		w.events = append(w.events, "start central")
	case CentralRetire:
		w.s.Central = CentralRetired
		w.events = append(w.events, "retire central")
	case CentralInterconnect:
		w.s.NoInterconnect = false
		w.events = append(w.events, "interconnect on")
	}
	// Moves ask first (Target), then land on the next step (the plugin pod annotates).
	for i := range w.s.Nodes {
		n := &w.s.Nodes[i]
		if n.Moving() && n.Ready && n.Held == "" {
			n.Zone = n.Target
		}
	}
	var moved []string
	for i := range w.s.Nodes {
		if z, ok := d.Move[w.s.Nodes[i].Name]; ok {
			w.s.Nodes[i].Target = z
			moved = append(moved, w.s.Nodes[i].Name+"->"+z)
		}
	}
	if len(moved) > 0 {
		w.events = append(w.events, "move "+strings.Join(moved, ","))
	}
	if d.DeleteConfig {
		w.s.Config = Config{Mode: Multi, Definitive: true}
		w.events = append(w.events, "delete ConfigMap")
	}
	return d
}

func (w *world) run(t *testing.T) Decision {
	t.Helper()
	for range 50 {
		if d := w.step(t); d.Done {
			return d
		}
	}
	t.Fatalf("no convergence: %v", w.events)
	return Decision{}
}

func TestTransitions(t *testing.T) {
	multiCfg, singleCfg := Config{Mode: Multi, Definitive: true}, Config{Present: true, Mode: Single, Definitive: true}
	cases := []struct {
		name    string
		nodes   []Node
		cfg     Config
		central Central
		// legacy: the plugin runs without interconnect (nodes annotated "global" or not at all).
		legacy bool
		want   []string
		final  Mode
	}{
		{name: "fresh install: multizone, no ConfigMap, nothing to do", nodes: nodes("own", "own"), cfg: multiCfg, central: CentralRetired,
			final: Multi},
		{name: "legacy to multizone goes through single zone, then retires the central side and deletes the ConfigMap",
			nodes: nodes("", ""), cfg: multiCfg, central: CentralRunning, final: Multi,
			want: []string{"write intermediate ConfigMap", "move n1->global", "move n2->global", "move n1->n1", "move n2->n2", "retire central", "delete ConfigMap"}},
		{name: "a definitive single-zone ConfigMap stops the upgrade at single zone and stays", nodes: nodes("", ""), cfg: singleCfg,
			central: CentralRunning, final: Single, want: []string{"move n1->global", "move n2->global"}},
		{name: "multizone to single zone: the central side first", nodes: nodes("own", "own"), cfg: singleCfg, central: CentralRetired,
			final: Single, want: []string{"start central", "move n1->global", "move n2->global"}},
		{name: "single zone to multizone (ConfigMap deleted): the nodes first, the central side last", nodes: nodes("global", "global"),
			cfg: multiCfg, central: CentralRunning, final: Multi, want: []string{"move n1->n1", "move n2->n2", "retire central"}},
		{name: "a plugin without interconnect is legacy though its nodes say global: interconnect first, then each node its own zone",
			nodes: nodes("global", "global"), legacy: true, cfg: multiCfg, central: CentralRunning, final: Multi,
			want: []string{"write intermediate ConfigMap", "interconnect on", "move n1->n1", "move n2->n2", "retire central", "delete ConfigMap"}},
		{name: "legacy without interconnect to a definitive single zone: interconnect on, no node moves", nodes: nodes("global", "global"),
			legacy: true, cfg: singleCfg, central: CentralRunning, final: Single, want: []string{"interconnect on"}},
		{name: "legacy with no annotations and no interconnect: interconnect on, then the nodes join global", nodes: nodes("", ""),
			legacy: true, cfg: singleCfg, central: CentralRunning, final: Single, want: []string{"interconnect on", "move n1->global", "move n2->global"}},
		{name: "undefined converges to the desired layout", nodes: nodes("global", "own"), cfg: multiCfg, central: CentralRunning,
			final: Multi, want: []string{"move n1->n1", "retire central"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &world{s: State{Nodes: c.nodes, Config: c.cfg, Central: c.central, Pools: pools(t, c.nodes, 1), NoInterconnect: c.legacy}}
			if c.legacy && Layout(w.s) != Legacy {
				t.Fatalf("a plugin without interconnect is %s, want legacy", Layout(w.s))
			}
			d := w.run(t)
			if !reflect.DeepEqual(w.events, c.want) {
				t.Errorf("events %q\nwant   %q", w.events, c.want)
			}
			if Layout(w.s) != c.final || d.Desired != c.final {
				t.Errorf("ended in %s (desired %s), want %s", Layout(w.s), d.Desired, c.final)
			}
			if c.cfg.Present && c.cfg.Definitive && w.s.Config != c.cfg {
				t.Errorf("a definitive ConfigMap was changed: %+v", w.s.Config)
			}
		})
	}
}

// TestNothingMovesWhileThePluginRestarts: while the plugin's pods restart
// (interconnect turned on, a restart after a live change, the last move's
// pod), no node move starts, interconnect is not turned on again, the central
// side is left alone and the rollout is not reported done.
func TestNothingMovesWhileThePluginRestarts(t *testing.T) {
	ns := nodes("global", "global")
	s := State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 0),
		Restarting: "daemonset/ovnkube-node: 1 of 2 pods restarted"}
	d := Decide(s)
	if len(d.Move) != 0 || d.Central != CentralNone || d.Phase != "WaitingForPlugin" || !strings.Contains(d.Holding, "1 of 2 pods restarted") {
		t.Fatalf("restarting: %+v", d)
	}
	s.Restarting = ""
	if d := Decide(s); len(d.Move) == 0 {
		t.Fatalf("restarted: no move: %+v", d)
	}
	s.NoInterconnect = true
	s.Restarting = "deployment/ovnkube-master: 0 of 1 pods restarted"
	if d := Decide(s); d.Central != CentralNone || d.Phase != "WaitingForPlugin" {
		t.Fatalf("interconnect turned on while the central side restarts: %+v", d)
	}
	own := nodes("own", "own")
	d = Decide(State{Nodes: own, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRetired, Pools: pools(t, own, 0),
		Restarting: "deployment/ovnkube-control-plane: 0 of 1 pods restarted"})
	if d.Done || d.Phase != "WaitingForPlugin" {
		t.Fatalf("done while the plugin restarts: %+v", d)
	}
}

// TestNothingMovesWhileTheLastMoveSettles: while the plugin's nodes take in
// the move that just ended, no other node starts one, the central side is
// left alone and the rollout is not done; then the next node moves.
func TestNothingMovesWhileTheLastMoveSettles(t *testing.T) {
	ns := nodes("own", "global")
	s := State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 0),
		Settling: "node n1's move ended 1s ago"}
	d := Decide(s)
	if len(d.Move) != 0 || d.Central != CentralNone || d.Phase != "WaitingForPlugin" || d.Holding != s.Settling {
		t.Fatalf("settling: %+v", d)
	}
	s.Settling = ""
	if d := Decide(s); d.Move["n2"] != "n2" {
		t.Fatalf("settled: n2 does not move: %+v", d)
	}
	own := nodes("own", "own")
	d = Decide(State{Nodes: own, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, own, 0), Settling: "node n2's move ends now"})
	if d.Central != CentralNone || d.Done || d.Phase != "WaitingForPlugin" {
		t.Fatalf("the central side retired while the last move settles: %+v", d)
	}
}

func TestPoolLimitAndParallelism(t *testing.T) {
	ns := nodes("global", "global", "global", "global", "global")
	w := &world{s: State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 2)}}
	for range 20 {
		d := w.step(t)
		moving := 0
		for _, n := range w.s.Nodes {
			if n.Moving() {
				moving++
			}
		}
		if moving > 2 {
			t.Fatalf("%d nodes moving at once in a pool of maxParallel 2", moving)
		}
		if d.Done {
			break
		}
	}
	if Current(w.s.Nodes) != Multi || w.s.Central != CentralRetired {
		t.Fatalf("did not converge: %v", w.events)
	}
	if w.events[0] != "move n1->n1,n2->n2" {
		t.Errorf("first wave %q, want two nodes in name order", w.events[0])
	}
}

// TestADrainedNodeCountsAgainstThePool: a node a drain holds takes its
// pool's slot; no other node of the pool starts moving, but the drained node
// itself may move in the slot it holds.
func TestADrainedNodeCountsAgainstThePool(t *testing.T) {
	ns := nodes("global", "global", "global")
	s := State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 1), Busy: map[string]bool{"n2": true}}
	if d := Decide(s); len(d.Move) != 1 || d.Move["n2"] != "n2" {
		t.Fatalf("moves %v, want n2 alone (its drain holds the pool's one slot)", d.Move)
	}
	s.Nodes[1].Target = "n2" // n2 moving, and still drained
	if d := Decide(s); len(d.Move) != 0 {
		t.Fatalf("moves %v, want none: n2 counts once, and the pool allows one", d.Move)
	}
}

func TestADownNodeHoldsBeforeTheFinalStep(t *testing.T) {
	ns := nodes("global", "global", "global")
	ns[1].Ready = false
	w := &world{s: State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 0)}}
	var d Decision
	for range 10 {
		d = w.step(t)
	}
	if d.Done || w.s.Central != CentralRunning {
		t.Fatalf("a down node's cluster was finished: done %v, central %s", d.Done, w.s.Central)
	}
	if !strings.Contains(d.Holding, "n2") || w.s.Nodes[0].Zone != "n1" || w.s.Nodes[2].Zone != "n3" || w.s.Nodes[1].Zone != GlobalZone {
		t.Fatalf("holding %q, nodes %+v", d.Holding, w.s.Nodes)
	}
	w.s.Nodes[1].Ready = true // it comes back
	d = w.run(t)
	if Current(w.s.Nodes) != Multi || w.s.Central != CentralRetired || d.Holding != "" {
		t.Fatalf("after the node came back: %v %s %q", w.events, w.s.Central, d.Holding)
	}
}

func TestAHeldMoveKeepsItsSlotAndHoldsTheFinalStep(t *testing.T) {
	ns := nodes("global", "global", "global")
	w := &world{s: State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 1)}}
	w.step(t) // n1 asked to move
	w.s.Nodes[0].Held = "plugin pod ovn/node-x: container node CrashLoopBackOff"
	var d Decision
	for range 10 {
		d = w.step(t)
	}
	if d.Done || d.Central != CentralNone || len(d.Move) != 0 || w.s.Central != CentralRunning {
		t.Fatalf("a held move did not hold the rollout: %+v, central %s", d, w.s.Central)
	}
	if w.s.Nodes[1].Target != "" || w.s.Nodes[2].Target != "" {
		t.Fatalf("another node of the pool took the held node's slot: %+v", w.s.Nodes)
	}
	if !strings.Contains(d.Holding, "node n1") || !strings.Contains(d.Holding, "CrashLoopBackOff") {
		t.Fatalf("holding %q does not name the node and the reason", d.Holding)
	}
	w.s.Pools.Limit[w.s.Pools.Owner["n2"]] = 2 // the pool's maxParallel raised: n2 starts beside the held n1
	if d = Decide(w.s); d.Move["n2"] != "n2" || d.Move["n3"] != "" {
		t.Fatalf("with maxParallel 2: moves %v", d.Move)
	}
	w.s.Nodes[0].Held = "" // its plugin pod finishes the move
	if d = w.run(t); Current(w.s.Nodes) != Multi || w.s.Central != CentralRetired || d.Holding != "" {
		t.Fatalf("after the move finished: %v %s %q", w.events, w.s.Central, d.Holding)
	}
}

func TestUndefinedWaitsForAForeignRollout(t *testing.T) {
	ns := nodes("global", "own", "own")
	ns[0].Target = "somewhere" // someone else's move, not towards the desired layout
	d := Decide(State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 0)})
	if d.Holding == "" || len(d.Move) != 0 || d.Central != CentralNone {
		t.Fatalf("acted during a foreign rollout: %+v", d)
	}
	ns[0].Zone = "somewhere" // it ended
	d = Decide(State{Nodes: ns, Config: Config{Mode: Multi, Definitive: true}, Central: CentralRunning, Pools: pools(t, ns, 0)})
	if d.Move["n1"] != "n1" {
		t.Fatalf("after the rollout ended: %+v", d)
	}
}
