package rollout

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
)

// TestHoldKeepsOnlyWhatAnInvalidPoolMightTake: an invalid pool of priority 50
// might take any node whose owner does not outrank it; nodes of the pools
// that outrank it are decided as usual.
func TestHoldKeepsOnlyWhatAnInvalidPoolMightTake(t *testing.T) {
	pools := []Pool{
		pool(t, "first", 10, intstr.FromInt32(1), namesIn("A")...),
		pool(t, "equal-a", 50, intstr.FromInt32(1), namesIn("B")...), // "equal-a" < "equal-z": outranks it
		pool(t, "late", 90, intstr.FromInt32(1), namesIn("C")...),
	}
	bad := errors.New(`netshiftnodepool "equal-z": spec.nodeSelectorTerms[0]: bad`)
	for _, c := range []struct {
		name    string
		invalid InvalidPool
		held    []string
	}{
		{"priority 50", InvalidPool{Name: "equal-z", Priority: 50, Err: bad}, []string{"C", "D"}},
		{"priority 50, name first", InvalidPool{Name: "aaa", Priority: 50, Err: bad}, []string{"B", "C", "D"}},
		{"priority 0", InvalidPool{Name: "zero", Priority: 0, Err: bad}, []string{"A", "B", "C", "D"}},
		{"priority out of range", InvalidPool{Name: "x", Priority: 500, Err: bad}, []string{"A", "B", "C", "D"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Resolve(nodes("A", "B", "C", "D"), pools) // D: the implicit pool, outranking nothing
			m.Hold(pools, []InvalidPool{c.invalid})
			var held []string
			for _, n := range []string{"A", "B", "C", "D"} {
				if why := m.Held[n]; why != "" {
					held = append(held, n)
					if !strings.Contains(why, c.invalid.Name) || !strings.Contains(why, "bad") {
						t.Errorf("%s held for %q: want the pool and its error", n, why)
					}
				}
			}
			if !reflect.DeepEqual(held, c.held) {
				t.Errorf("held %v, want %v", held, c.held)
			}
			// Held nodes are never admitted; the others are, under their limits.
			status := map[string]v1alpha1.DrainStatus{}
			for _, n := range []string{"A", "B", "C", "D"} {
				status[n] = v1alpha1.DrainRequired
			}
			for _, n := range m.Admit(status, nil) {
				if m.Held[n] != "" {
					t.Errorf("admitted held node %s", n)
				}
			}
		})
	}
}

// TestHeldNodeStillReleasesItsSlot: the release TestReleaseFreesSlotInSamePass
// shows goes on when the pool's nodes are held; only the admission waits.
func TestHeldNodeStillReleasesItsSlot(t *testing.T) {
	pools := []Pool{pool(t, "p", 50, intstr.FromInt32(1))}
	m := Resolve(nodes("a", "b"), pools)
	m.Hold(pools, []InvalidPool{{Name: "bad", Priority: 0, Err: errors.New("bad")}})
	ns := []NodeDrain{
		{Name: "a", Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestIdle)}},
		{Name: "b", Status: v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}},
	}
	got := DecideDrains(m, ns, DefaultDrainPolicy, t0)
	if len(got) != 1 || got[0].Action != ActionRelease || got[0].Node != "a" {
		t.Fatalf("decisions = %+v, want the release of a alone", got)
	}
}

// TestResolveReportsLostTies: pools of equal priority that select the same
// node: the one whose name sorts first owns it, the other learns which nodes
// it lost and to whom; a pool of a lower priority losing is no tie.
func TestResolveReportsLostTies(t *testing.T) {
	pools := []Pool{
		pool(t, "alpha", 5, intstr.FromInt32(1), namesIn("A", "B")...),
		pool(t, "beta", 5, intstr.FromInt32(1), namesIn("B", "C")...),
		pool(t, "gamma", 9, intstr.FromInt32(1), namesIn("C")...),
	}
	m := Resolve(nodes("A", "B", "C"), pools)
	want := map[string][]LostTie{"beta": {{Node: "B", Owner: "alpha"}}}
	if !reflect.DeepEqual(m.LostTies, want) {
		t.Errorf("lost ties %v, want %v", m.LostTies, want)
	}
}

func TestAllowKeepsToEachPoolsLimit(t *testing.T) {
	m := Membership{
		Owner: map[string]string{"a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b", "d1": "default", "d2": "default", "x": "a"},
		Limit: map[string]int{"a": 2, "b": 0, "default": 1},
		Held:  map[string]string{"x": "an invalid pool might own it"},
	}
	// Pool a allows 2 and has a1 out: one more, the first by name; b has no limit; default's
	// one is out already; a node in no pool and a held one are never allowed.
	got := m.Allow([]string{"a3", "a2", "b2", "b1", "d2", "gone", "x"}, []string{"a1", "d1"})
	if want := []string{"a2", "b1", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("Allow = %v, want %v", got, want)
	}
	if got := m.Allow([]string{"a3", "a2", "d2"}, nil); !slices.Equal(got, []string{"a2", "a3", "d2"}) {
		t.Fatalf("with nothing out: %v", got)
	}
}
