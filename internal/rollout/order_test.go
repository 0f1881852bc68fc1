package rollout

import (
	"reflect"
	"testing"
)

func TestOrderChainsEachAdmissionToARelease(t *testing.T) {
	owner := map[string]string{"a1": "a", "a2": "a", "a3": "a", "a4": "a", "b1": "b", "b2": "b", "c1": "c", "c2": "c"}
	d := func(node string, a Action) Decision { return Decision{Node: node, Action: a} }
	cases := []struct {
		name   string
		ds     []Decision
		chains [][]Decision
		late   []Decision
	}{
		{"nothing", nil, nil, nil},
		{"a release and an admission of one pool are one chain",
			[]Decision{d("a1", ActionRelease), d("a2", ActionAdmit)},
			[][]Decision{{d("a1", ActionRelease), d("a2", ActionAdmit)}}, nil},
		{"a timeout given up frees its slot too",
			[]Decision{d("a1", ActionTimeoutFail), d("a2", ActionAdmit)},
			[][]Decision{{d("a1", ActionTimeoutFail), d("a2", ActionAdmit)}}, nil},
		{"more releases than admissions: the rest alone",
			[]Decision{d("a1", ActionRelease), d("a2", ActionRelease), d("a3", ActionAdmit)},
			[][]Decision{{d("a1", ActionRelease), d("a3", ActionAdmit)}, {d("a2", ActionRelease)}}, nil},
		{"more admissions than releases: the rest wait for every chain",
			[]Decision{d("a1", ActionRelease), d("a2", ActionAdmit), d("a3", ActionAdmit), d("a4", ActionAdmit)},
			[][]Decision{{d("a1", ActionRelease), d("a2", ActionAdmit)}}, []Decision{d("a3", ActionAdmit), d("a4", ActionAdmit)}},
		{"a pool with no release admits at once",
			[]Decision{d("b1", ActionAdmit), d("b2", ActionAdmit)},
			[][]Decision{{d("b1", ActionAdmit)}, {d("b2", ActionAdmit)}}, nil},
		{"a release never frees a slot of another pool",
			[]Decision{d("a1", ActionRelease), d("b1", ActionAdmit), d("c1", ActionRelease), d("c2", ActionAdmit)},
			[][]Decision{{d("a1", ActionRelease)}, {d("b1", ActionAdmit)}, {d("c1", ActionRelease), d("c2", ActionAdmit)}}, nil},
		{"a cancellation frees no slot and gates nothing",
			[]Decision{d("a1", ActionCancel), d("a2", ActionAdmit)},
			[][]Decision{{d("a1", ActionCancel)}, {d("a2", ActionAdmit)}}, nil},
		{"evictions, completions and queueing run at once",
			[]Decision{d("a1", ActionEvict), d("a2", ActionComplete), d("a3", ActionQueue), d("a4", ActionTimeoutWait)},
			[][]Decision{{d("a1", ActionEvict)}, {d("a2", ActionComplete)}, {d("a3", ActionQueue)}, {d("a4", ActionTimeoutWait)}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chains, late := Order(c.ds, owner)
			if !reflect.DeepEqual(chains, c.chains) || !reflect.DeepEqual(late, c.late) {
				t.Errorf("Order = %v, late %v; want %v, late %v", chains, late, c.chains, c.late)
			}
			if n := countAll(chains) + len(late); n != len(c.ds) {
				t.Errorf("%d decisions in, %d out", len(c.ds), n)
			}
		})
	}
}

// TestOrderNeverGrantsBeforeTheSlotIsFree: 5 releases and 7 admissions in a pool (so 2
// slots were free before the pass). Whichever releases fail, the admissions carried out
// never outnumber the releases carried out, but for those 2 once every release succeeded.
func TestOrderNeverGrantsBeforeTheSlotIsFree(t *testing.T) {
	owner := map[string]string{}
	var ds []Decision
	for i := range 5 {
		n := string(rune('a' + i))
		owner["r"+n], owner["g"+n] = "p", "p"
		ds = append(ds, Decision{Node: "r" + n, Action: ActionRelease})
	}
	for i := range 7 {
		n := string(rune('a' + i))
		owner["g"+n] = "p"
		ds = append(ds, Decision{Node: "g" + n, Action: ActionAdmit})
	}
	chains, late := Order(ds, owner)
	for failing := 0; failing < 1<<len(chains); failing++ {
		released, granted, ok := 0, 0, true
		for i, ch := range chains {
			for _, d := range ch {
				if freesSlot(d) && failing&(1<<i) != 0 {
					ok = false
					break // the release failed: the chain stops
				}
				if freesSlot(d) {
					released++
				} else {
					granted++
				}
			}
		}
		if ok {
			granted += len(late)
		}
		freeBefore := 0
		if ok {
			freeBefore = 2
		}
		if granted > released+freeBefore {
			t.Fatalf("failing chains %b: %d granted, %d released", failing, granted, released)
		}
	}
}

func countAll(chains [][]Decision) int {
	n := 0
	for _, c := range chains {
		n += len(c)
	}
	return n
}
