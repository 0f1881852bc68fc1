package rollout

import (
	"fmt"
	"maps"
	"reflect"
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

func TestOrderPutsAPoolsAdmissionsAfterItsReleases(t *testing.T) {
	owner := map[string]string{"a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b", "c1": "c"}
	d := func(node string, a Action) Decision { return Decision{Node: node, Action: a} }
	cases := []struct {
		name   string
		ds     []Decision
		want   []Batch
		others []Decision
	}{
		{"nothing", nil, nil, nil},
		{"a pool's releases, then its admissions",
			[]Decision{d("a1", ActionRelease), d("a2", ActionAdmit), d("a3", ActionTimeoutFail)},
			[]Batch{{First: []Decision{d("a1", ActionRelease), d("a3", ActionTimeoutFail)}, Then: []Decision{d("a2", ActionAdmit)}}}, nil},
		{"pools apart: one pool's release never frees another's slot",
			[]Decision{d("a1", ActionRelease), d("b1", ActionAdmit), d("a2", ActionAdmit), d("b2", ActionRelease)},
			[]Batch{{First: []Decision{d("a1", ActionRelease)}, Then: []Decision{d("a2", ActionAdmit)}},
				{First: []Decision{d("b2", ActionRelease)}, Then: []Decision{d("b1", ActionAdmit)}}}, nil},
		{"a pool with no release admits at once",
			[]Decision{d("c1", ActionAdmit)},
			[]Batch{{Then: []Decision{d("c1", ActionAdmit)}}}, nil},
		{"a cancellation frees no slot and gates nothing",
			[]Decision{d("a1", ActionCancel), d("a2", ActionAdmit)},
			[]Batch{{Then: []Decision{d("a2", ActionAdmit)}}}, []Decision{d("a1", ActionCancel)}},
		{"evictions, completions, queueing and waits wait for nothing",
			[]Decision{d("a1", ActionEvict), d("a2", ActionComplete), d("a3", ActionQueue), d("b1", ActionTimeoutWait)},
			nil, []Decision{d("a1", ActionEvict), d("a2", ActionComplete), d("a3", ActionQueue), d("b1", ActionTimeoutWait)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, others := Order(c.ds, owner)
			if !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(others, c.others) {
				t.Errorf("Order = %+v, others %+v\nwant %+v, others %+v", got, others, c.want, c.others)
			}
		})
	}
}

// TestOrderedPassNeverExceedsALimit drives DecideDrains and Order together, then
// carries the pass out with every combination of failing releases: at no point may
// a pool hold more slots than its limit, or, when it held more already (its limit
// was lowered), more than it held. Nodes a zone move holds count and free nothing.
func TestOrderedPassNeverExceedsALimit(t *testing.T) {
	type node struct {
		name   string
		status v1alpha1.DrainStatus
		done   bool // its agent is done: the pass releases it
		busy   bool
	}
	cases := []struct {
		name  string
		limit int
		nodes []node
	}{
		{"under the limit", 3, []node{{"n1", v1alpha1.DrainingComplete, true, false}, {"n2", v1alpha1.DrainingComplete, true, false},
			{"n3", v1alpha1.DrainRequired, false, false}, {"n4", v1alpha1.DrainRequired, false, false}, {"n5", v1alpha1.DrainRequired, false, false}}},
		{"a released node a zone move still holds", 2, []node{{"n1", v1alpha1.DrainingComplete, true, true}, {"n2", v1alpha1.DrainingComplete, true, false},
			{"n3", v1alpha1.DrainRequired, false, false}, {"n4", v1alpha1.DrainRequired, false, false}}},
		{"over the limit (lowered)", 2, []node{{"n1", v1alpha1.DrainingComplete, true, false}, {"n2", v1alpha1.DrainingComplete, true, false},
			{"n3", v1alpha1.Draining, false, false}, {"n4", v1alpha1.DrainRequired, false, false}, {"n5", v1alpha1.DrainRequired, false, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nodes := make([]NodeDrain, 0, len(c.nodes))
			status := map[string]v1alpha1.DrainStatus{}
			busy := map[string]bool{}
			members := []string{}
			for _, n := range c.nodes {
				st := v1alpha1.NetshiftNodeStateStatus{DrainStatus: n.status, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}
				if n.done {
					st.DrainRequest = req("op", v1alpha1.DrainRequestIdle)
				}
				nodes = append(nodes, NodeDrain{Name: n.name, Status: st, Busy: n.busy, PodsLeft: 1})
				status[n.name], busy[n.name] = n.status, n.busy
				members = append(members, n.name)
			}
			m := Membership{Owner: map[string]string{}, Members: map[string][]string{"p": members}, Limit: map[string]int{"p": c.limit}}
			for _, n := range members {
				m.Owner[n] = "p"
			}
			initial := maps.Clone(status)
			holding := func() int {
				h := 0
				for n, s := range status {
					if HoldsSlot(s) || busy[n] {
						h++
					}
				}
				return h
			}
			before := holding()
			bound := max(c.limit, before)
			pass := DecideDrains(m, nodes, DrainPolicy{Timeout: 0, OnTimeout: v1alpha1.DrainTimeoutWait}, t0)
			batches, others := Order(pass, m.Owner)
			batches = append(batches, Batch{First: others}) // carried out side by side, in any order
			releases := 0
			for _, b := range batches {
				for _, d := range b.First {
					if freesSlot(d) {
						releases++
					}
				}
			}
			admits := 0
			for _, d := range pass {
				if d.Action == ActionAdmit {
					admits++
				}
			}
			if admits == 0 || releases == 0 {
				t.Fatalf("the pass admits %d and releases %d: nothing to check (%v)", admits, releases, pass)
			}
			apply := func(failing int, d Decision) {
				status[d.Node] = d.To
				h := holding()
				if d.Action == ActionAdmit && !busy[d.Node] && h > c.limit {
					t.Fatalf("failing releases %b: admitting %s makes %d nodes hold a slot, limit %d: %v", failing, d.Node, h, c.limit, fmt.Sprint(status))
				}
				if h > bound {
					t.Fatalf("failing releases %b: %d nodes hold a slot, limit %d (held %d before): %v", failing, h, c.limit, before, fmt.Sprint(status))
				}
			}
			for failing := 0; failing < 1<<releases; failing++ {
				maps.Copy(status, initial)
				i := 0
				for _, b := range batches {
					ok := true
					for _, d := range b.First {
						if !freesSlot(d) {
							apply(failing, d)
							continue
						}
						if failing&(1<<i) != 0 {
							ok = false
						} else {
							apply(failing, d)
						}
						i++
					}
					if !ok {
						continue
					}
					for _, d := range b.Then {
						apply(failing, d)
					}
				}
			}
		})
	}
}
