package rollout

// A Batch is part of a pass to carry out in two steps: First side by side,
// then, only once every one of them is carried out, Then side by side.
type Batch struct {
	First, Then []Decision
}

// Order arranges a pass's decisions so that no slot is granted before it is
// free, and no pool waits for another: each pool's batch admits after every
// release of that pool (its slots freed, whichever of them a release really
// frees: a node a zone move still holds frees none, and a pool over its limit
// frees fewer than it releases), and after nothing else. The other decisions
// (queueing, evictions, completions, cancellations) wait for nothing; the
// caller carries them out beside the batches, on calls of their own, so that
// a pool's next node never queues behind another node's evictions. A batch
// stops at its first failure.
//
// owner maps a node to its pool (Membership.Owner).
func Order(ds []Decision, owner map[string]string) (batches []Batch, others []Decision) {
	byPool := map[string]int{} // pool -> its batch
	for _, d := range ds {
		frees, admits := freesSlot(d), d.Action == ActionAdmit
		if !frees && !admits {
			others = append(others, d)
			continue
		}
		pool := owner[d.Node]
		i, ok := byPool[pool]
		if !ok {
			i = len(batches)
			byPool[pool] = i
			batches = append(batches, Batch{})
		}
		if frees {
			batches[i].First = append(batches[i].First, d)
		} else {
			batches[i].Then = append(batches[i].Then, d)
		}
	}
	return batches, others
}

// freesSlot says whether the decision gives back a slot its node holds (a
// cancellation frees only a place in the queue).
func freesSlot(d Decision) bool { return d.Action == ActionRelease || d.Action == ActionTimeoutFail }
