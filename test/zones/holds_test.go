package zones

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/zones"
)

// TestADrainAndAZoneMoveShareTheNodeAndThePool: two nodes in the implicit
// pool (one at a time) move from the legacy layout while their agents ask
// for a drain. The drain of the node that is moving goes in the slot its
// move holds; the other node's drain waits for that slot; the moving node
// stays cordoned when its move ends and its drain has not, and is uncordoned
// when the drain ends. Watched from the API server: never two nodes busy at
// once, and the first node never schedulable while something holds it.
func TestADrainAndAZoneMoveShareTheNodeAndThePool(t *testing.T) {
	cl := setup(t, []string{"", ""}, nil)
	w := cl.watchBusy()
	cl.stall("z1", true)
	cl.waitAsked("z1", "global")

	cl.askDrain("z1", "op-1", v1alpha1.DrainRequestRequired)
	cl.askDrain("z2", "op-1", v1alpha1.DrainRequestRequired)
	cl.waitState("z1", "its drain admitted in the slot its move holds", func(s v1alpha1.NetshiftNodeStateStatus) bool {
		_, drain := hold.Of(s, v1alpha1.HoldDrain)
		_, move := hold.Of(s, v1alpha1.HoldZoneMove)
		return s.DrainStatus == v1alpha1.DrainingComplete && drain && move && s.CordonedByNetshift
	})
	if s := cl.nodeState("z2"); s.DrainStatus != v1alpha1.DrainRequired {
		t.Fatalf("z2's drain is %q while z1 holds the pool's one slot: want Drain_Required", s.DrainStatus)
	}

	// z1's move ends; its drain holds it still.
	cl.stall("z1", false)
	cl.waitMoved("z1", "global")
	cl.waitState("z1", "its move's hold given back, its drain's kept", func(s v1alpha1.NetshiftNodeStateStatus) bool {
		_, drain := hold.Of(s, v1alpha1.HoldDrain)
		_, move := hold.Of(s, v1alpha1.HoldZoneMove)
		return drain && !move
	})
	cl.operatorCaughtUp()
	if !cl.unschedulable("z1") {
		t.Fatal("z1 was uncordoned when its move ended, while its drain still holds it")
	}
	if s := cl.nodeState("z2"); hold.Busy(s) {
		t.Fatalf("z2 holds a slot (%q, holds %+v) while z1's drain holds the pool's one", s.DrainStatus, s.Holds)
	}
	w.drainOver()
	cl.askDrain("z1", "op-1", v1alpha1.DrainRequestIdle)
	cl.waitState("z1", "free", func(s v1alpha1.NetshiftNodeStateStatus) bool { return len(s.Holds) == 0 && !s.CordonedByNetshift })

	// z2's drain and its move share the next slot, in either order; its agent is done once drained.
	cl.waitState("z2", "drained", func(s v1alpha1.NetshiftNodeStateStatus) bool { return s.DrainStatus == v1alpha1.DrainingComplete })
	cl.askDrain("z2", "op-1", v1alpha1.DrainRequestIdle)
	cl.waitConverged(zones.Multi)
	cl.uncordonedAll()
	w.stop()
	if w.peak > 1 {
		t.Errorf("%d nodes of a pool with maxParallel 1 were busy at once (drains and moves counted together): %v", w.peak, w.worst)
	}
	if len(w.early) > 0 {
		t.Errorf("z1 was schedulable while held: %v", w.early)
	}
}

// askDrain writes the node's drain request as its agent would.
func (cl *cluster) askDrain(node, op string, state v1alpha1.DrainRequestState) {
	cl.t.Helper()
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var nns v1alpha1.NetshiftNodeState
		if err := cl.c.Get(ctx, types.NamespacedName{Name: node}, &nns); err != nil {
			return false, nil // the operator creates it
		}
		patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		nns.Status.DrainRequest = &v1alpha1.DrainRequest{Operation: op, State: state}
		return cl.c.Status().Patch(ctx, &nns, patch) == nil, nil
	})
	if err != nil {
		cl.t.Fatalf("node %s: write its drain request: %v", node, err)
	}
}

func (cl *cluster) nodeState(node string) v1alpha1.NetshiftNodeStateStatus {
	cl.t.Helper()
	var nns v1alpha1.NetshiftNodeState
	if err := cl.c.Get(cl.ctx, types.NamespacedName{Name: node}, &nns); err != nil {
		cl.t.Fatal(err)
	}
	return nns.Status
}

func (cl *cluster) waitState(node, what string, ok func(v1alpha1.NetshiftNodeStateStatus) bool) {
	cl.t.Helper()
	var last v1alpha1.NetshiftNodeStateStatus
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var nns v1alpha1.NetshiftNodeState
		if err := cl.c.Get(ctx, types.NamespacedName{Name: node}, &nns); err != nil {
			return false, nil
		}
		last = nns.Status
		return ok(last), nil
	})
	if err != nil {
		cl.t.Fatalf("node %s never %s: drain %q, holds %+v, cordoned by netshift %v (moves %v)",
			node, what, last.DrainStatus, last.Holds, last.CordonedByNetshift, cl.movesSoFar())
	}
}

func (cl *cluster) unschedulable(node string) bool {
	cl.t.Helper()
	var n corev1.Node
	if err := cl.c.Get(cl.ctx, types.NamespacedName{Name: node}, &n); err != nil {
		cl.t.Fatal(err)
	}
	return n.Spec.Unschedulable
}

// busyWatch follows the NetshiftNodeStates in the order the API server
// changed them (one watch: one order) and records the most nodes busy at once
// (a drain holding its slot, a zone move's hold: a move is recorded before
// its node is labelled and given back after the node joined its zone); and,
// from a watch of the nodes, every moment node z1 was schedulable after its
// first cordon and before the test ended its drain.
type busyWatch struct {
	mu        sync.Mutex
	states    map[string]v1alpha1.NetshiftNodeStateStatus
	cordoned  bool // z1 was cordoned once
	drainDone bool
	peak      int
	worst     []string
	early     []string
	cancel    context.CancelFunc
	done      sync.WaitGroup
}

func (cl *cluster) watchBusy() *busyWatch {
	cl.t.Helper()
	wc, err := client.NewWithWatch(env.Admin, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		cl.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(cl.ctx)
	bw := &busyWatch{states: map[string]v1alpha1.NetshiftNodeStateStatus{}, cancel: cancel}
	for _, list := range []client.ObjectList{&corev1.NodeList{}, &v1alpha1.NetshiftNodeStateList{}} {
		w, err := wc.Watch(ctx, list)
		if err != nil {
			cl.t.Fatal(err)
		}
		bw.done.Add(1)
		go func() {
			defer bw.done.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Error {
					bw.observe(ev.Object)
				}
			}
		}()
	}
	cl.t.Cleanup(bw.stop)
	return bw
}

func (bw *busyWatch) observe(o any) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	switch o := o.(type) {
	case *corev1.Node:
		if o.Name == "z1" {
			bw.cordoned = bw.cordoned || o.Spec.Unschedulable
			if bw.cordoned && !bw.drainDone && !o.Spec.Unschedulable {
				bw.early = append(bw.early, "z1 schedulable at resourceVersion "+o.ResourceVersion)
			}
		}
	case *v1alpha1.NetshiftNodeState:
		bw.states[o.Name] = o.Status
		var busy []string
		for name, s := range bw.states {
			if hold.Busy(s) {
				busy = append(busy, name)
			}
		}
		slices.Sort(busy)
		if len(busy) > bw.peak {
			bw.peak, bw.worst = len(busy), busy
		}
	}
}

// drainOver marks the moment the test ends z1's drain: from then on z1 may
// be uncordoned.
func (bw *busyWatch) drainOver() {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.drainDone = true
}

func (bw *busyWatch) stop() {
	bw.cancel()
	bw.done.Wait()
}
