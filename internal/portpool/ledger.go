package portpool

import (
	"sort"
	"time"
)

// Bookkeeping is what Neutron should say of a port: its name and device,
// and, when a released port is reset, its pool's security groups.
type Bookkeeping struct {
	Name     string `json:"name"`
	DeviceID string `json:"deviceID"`
	// ResetGroups sets the port's security groups back to Groups (a comma-separated set).
	ResetGroups bool   `json:"resetGroups,omitempty"`
	Groups      string `json:"groups,omitempty"`
}

// Ledger holds the deferred Neutron bookkeeping: at most one pending update
// per port, the latest. A port handed out and released again before its
// update was sent costs no call at all, and a released port reused within the
// recycle period costs one (its new owner's), not two.
type Ledger struct {
	pending map[string]entry
}

type entry struct {
	Bookkeeping
	due time.Time
}

// Set records the port's wanted bookkeeping, due at due, replacing any pending one.
func (l *Ledger) Set(portID string, b Bookkeeping, due time.Time) {
	if l.pending == nil {
		l.pending = map[string]entry{}
	}
	l.pending[portID] = entry{Bookkeeping: b, due: due}
}

// Drop forgets a port's pending update (the port is deleted).
func (l *Ledger) Drop(portID string) { delete(l.pending, portID) }

// Len is the number of pending updates.
func (l *Ledger) Len() int { return len(l.pending) }

// Pending returns a port's pending update.
func (l *Ledger) Pending(portID string) (Bookkeeping, bool) {
	e, ok := l.pending[portID]
	return e.Bookkeeping, ok
}

// Update is one update to send.
type Update struct {
	PortID string
	Bookkeeping
}

// Due removes and returns the updates due at now (all of them if now is
// zero), earliest first.
func (l *Ledger) Due(now time.Time) []Update {
	var out []Update
	var dues []time.Time
	for id, e := range l.pending {
		if now.IsZero() || !e.due.After(now) {
			out = append(out, Update{PortID: id, Bookkeeping: e.Bookkeeping})
			dues = append(dues, e.due)
			delete(l.pending, id)
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if !dues[idx[a]].Equal(dues[idx[b]]) {
			return dues[idx[a]].Before(dues[idx[b]])
		}
		return out[idx[a]].PortID < out[idx[b]].PortID
	})
	sorted := make([]Update, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}
