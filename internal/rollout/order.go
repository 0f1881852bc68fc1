package rollout

// Order arranges a pass's decisions for carrying out so that no slot is
// granted before it is free and no granted slot waits for the rest of the
// pass. Each chain runs in order, stopping at its first failure, and chains
// run side by side:
//
//   - in each pool, an admission follows one release of that pool (the slot it
//     takes), so a node waits for one write, not for every release of the pass;
//   - a pool's admissions beyond its releases come last (Late), once every
//     chain succeeded: they may count on any of the pool's freed slots;
//   - a pool with no release admits at once (its slots were free already);
//   - everything else (queueing, evictions, completions, cancellations) is a
//     chain of its own.
//
// owner maps a node to its pool (Membership.Owner).
func Order(ds []Decision, owner map[string]string) (chains [][]Decision, late []Decision) {
	releases := map[string][]Decision{}
	admits := map[string][]Decision{}
	var pools []string // in order of first appearance, for a stable result
	seen := map[string]bool{}
	for _, d := range ds {
		pool := owner[d.Node]
		switch {
		case freesSlot(d):
			releases[pool] = append(releases[pool], d)
		case d.Action == ActionAdmit:
			admits[pool] = append(admits[pool], d)
		default:
			chains = append(chains, []Decision{d})
			continue
		}
		if !seen[pool] {
			seen[pool] = true
			pools = append(pools, pool)
		}
	}
	for _, pool := range pools {
		rs, as := releases[pool], admits[pool]
		for i, r := range rs {
			if i < len(as) {
				chains = append(chains, []Decision{r, as[i]})
			} else {
				chains = append(chains, []Decision{r})
			}
		}
		if len(as) <= len(rs) {
			continue
		}
		if len(rs) == 0 {
			for _, a := range as {
				chains = append(chains, []Decision{a})
			}
			continue
		}
		late = append(late, as[len(rs):]...)
	}
	return chains, late
}

// freesSlot says whether the decision gives back a slot its node holds (a
// cancellation frees only a place in the queue).
func freesSlot(d Decision) bool { return d.Action == ActionRelease || d.Action == ActionTimeoutFail }
