package scale

import "time"

// poolSlots counts a pool's waves from what a watch of its Nodes shows: each
// cordon takes one of the pool's limit slots, the one freed last (one never
// used only when none was freed), and gives it back at the uncordon. A pool's
// waves are the most nodes one of its slots took in turn: a drain that used
// all its slots, refilling each as it freed, takes ceil(nodes / limit); one
// that left slots unused takes more (nodes / the slots it used). A cordon
// beyond the limit takes a slot of its own (the watch reports the moment over
// the limit besides).
type poolSlots struct {
	slots []slot
	taken map[string]int // node -> its slot
}

type slot struct {
	nodes  int
	busy   bool
	freeAt time.Time
}

func newPoolSlots(limit int) *poolSlots {
	return &poolSlots{slots: make([]slot, max(limit, 0)), taken: map[string]int{}}
}

// cordoned gives node the free slot freed last.
func (p *poolSlots) cordoned(node string) {
	if _, ok := p.taken[node]; ok {
		return
	}
	best := -1
	for i, s := range p.slots {
		if !s.busy && (best < 0 || s.freeAt.After(p.slots[best].freeAt)) {
			best = i
		}
	}
	if best < 0 {
		p.slots = append(p.slots, slot{})
		best = len(p.slots) - 1
	}
	p.slots[best].busy = true
	p.slots[best].nodes++
	p.taken[node] = best
}

// uncordoned gives node's slot back at now.
func (p *poolSlots) uncordoned(node string, now time.Time) {
	i, ok := p.taken[node]
	if !ok {
		return
	}
	delete(p.taken, node)
	p.slots[i].busy, p.slots[i].freeAt = false, now
}

// waves is the most nodes one slot took.
func (p *poolSlots) waves() int {
	most := 0
	for _, s := range p.slots {
		most = max(most, s.nodes)
	}
	return most
}
