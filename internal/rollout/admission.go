package rollout

import (
	"slices"
	"sort"

	"netshift.io/netshift/api/v1alpha1"
)

// HoldsSlot reports whether a node in this drain status counts against its
// pool's limit: from admission until its slot is released.
func HoldsSlot(s v1alpha1.DrainStatus) bool {
	switch s {
	case v1alpha1.DrainDisabled, v1alpha1.Draining, v1alpha1.DrainingComplete,
		v1alpha1.DrainingMCPPausing, v1alpha1.DrainingMCPPaused:
		return true
	}
	return false
}

// Admit returns the nodes that may be given a slot now, in the order to admit
// them: per pool, nodes in Drain_Required in name order, as many as the pool's
// limit leaves free after counting the nodes that hold a slot (for a drain,
// or busy: held by something else that takes a slot, such as a zone move). A
// busy node that waits is admitted at once: it holds its slot already. Pools
// are visited in name order so the result is deterministic.
func (m Membership) Admit(status map[string]v1alpha1.DrainStatus, busy map[string]bool) []string {
	holding := make(map[string]int, len(m.Members))
	waiting := make(map[string][]string, len(m.Members))
	var admit []string
	for node, s := range status {
		pool, ok := m.Owner[node]
		if !ok {
			continue // a state for a node that is gone: it belongs to no pool
		}
		if HoldsSlot(s) || busy[node] {
			holding[pool]++
		}
		if s == v1alpha1.DrainRequired && m.Held[node] == "" {
			if busy[node] {
				admit = append(admit, node)
			} else {
				waiting[pool] = append(waiting[pool], node)
			}
		}
	}
	sort.Strings(admit)
	pools := make([]string, 0, len(waiting))
	for p := range waiting {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	for _, p := range pools {
		w := waiting[p]
		sort.Strings(w)
		n := min(len(w), m.slots(p, holding[p]))
		admit = append(admit, w[:n]...)
	}
	return admit
}

// Waves are the groups in which the given nodes would be configured if they
// all asked at once and each took the same time: wave k is what Admit gives
// once the nodes of the waves before it have finished. It calls the same Admit
// the drain controller calls, so the plan and the controller cannot disagree.
func (m Membership) Waves(need []string) [][]string {
	status := make(map[string]v1alpha1.DrainStatus, len(need))
	for _, n := range need {
		if _, ok := m.Owner[n]; ok {
			status[n] = v1alpha1.DrainRequired
		}
	}
	var waves [][]string
	for len(status) > 0 {
		wave := m.Admit(status, nil)
		if len(wave) == 0 {
			break // cannot happen: every pool's limit is at least 1 or unlimited
		}
		sort.Strings(wave)
		for _, n := range wave {
			delete(status, n)
		}
		waves = append(waves, wave)
	}
	return waves
}

// Allow is which of want (nodes not out yet) may be taken out of service
// now, in name order: in each pool as many as its limit leaves once holding
// (its nodes out already for the same purpose) are counted. A node in no pool, or held (an invalid
// pool might own it), is not allowed. It serves a live change's cordons of
// silent nodes and its catch-ups of nodes that were down, which take no
// drain slot but keep to the pools' limits all the same.
func (m Membership) Allow(want, holding []string) []string {
	held := map[string]int{}
	for _, n := range holding {
		if p, ok := m.Owner[n]; ok {
			held[p]++
		}
	}
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	var out []string
	for _, n := range sorted {
		p, ok := m.Owner[n]
		if !ok || m.Held[n] != "" || m.slots(p, held[p]) == 0 {
			continue
		}
		held[p]++
		out = append(out, n)
	}
	return out
}
