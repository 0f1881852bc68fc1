// Package hold is the one ledger of what holds a node: a drain, a zone move, a
// live change. Every controller that takes a node out of its normal service
// records its hold in the node's NetshiftNodeState through Take and gives it
// back through Release, so that:
//
//   - a node counts once against its pool's maxParallel whatever holds it
//     (Busy), where each controller used to count only its own kind;
//   - the cordon has one owner: netshift uncordons a node only when the last
//     hold that needed it cordoned is gone, never while another still does,
//     and never a node someone else cordoned.
//
// The functions are pure: the operator reads, calls them, and writes what
// they return (the status first when a cordon is taken, the node first when
// one is given back, so that a crash in between never forgets a cordon).
package hold

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/rollout"
)

// TakesSlot says whether a hold of this kind counts against the node's pool.
// A live change holds every node of the cluster at one synchronized time: it
// cannot wait for slots, so it takes none (and holds no slot from others).
func TakesSlot(k v1alpha1.HoldKind) bool { return k != v1alpha1.HoldLiveChange }

// Busy says whether the node counts against its pool: it carries a hold that
// takes a slot, other than one of the kinds except names (a controller asks
// whether something else holds the node). A drain that holds its slot counts
// even before its hold is recorded (a state an older operator wrote).
func Busy(s v1alpha1.NetshiftNodeStateStatus, except ...v1alpha1.HoldKind) bool {
	if rollout.HoldsSlot(s.DrainStatus) && !slices.Contains(except, v1alpha1.HoldDrain) {
		return true
	}
	return slices.ContainsFunc(s.Holds, func(h v1alpha1.NodeHold) bool {
		return TakesSlot(h.Kind) && !slices.Contains(except, h.Kind)
	})
}

// Adopt turns what an older operator recorded of its holds into holds: a
// drain holding its slot, a zone move (zoneCordoned, or a plugin pod restart
// in flight) and a live change's cordon (liveChangeCordoned). A cordon the
// older operator recorded as its own stays netshift's. It reports whether s
// changed; the caller writes it before deciding anything on it.
func Adopt(s *v1alpha1.NetshiftNodeStateStatus, now time.Time) bool {
	changed := false
	take := func(h v1alpha1.NodeHold, owned bool) {
		if _, ok := Of(*s, h.Kind); !ok {
			// The node is cordoned for it (as the older operator left it): nothing to cordon now.
			Take(s, h, true, now)
			changed = true
		}
		if owned && !s.CordonedByNetshift {
			s.CordonedByNetshift, changed = true, true
		}
	}
	if rollout.HoldsSlot(s.DrainStatus) {
		take(v1alpha1.NodeHold{Kind: v1alpha1.HoldDrain, ID: s.DrainOperation, Cordon: s.DrainStatus != v1alpha1.DrainDisabled}, false)
	}
	if s.ZoneCordoned != "" || s.ZoneRestart != nil {
		zone := s.ZoneCordoned
		if zone == "" {
			zone = s.ZoneRestart.Zone
		}
		take(v1alpha1.NodeHold{Kind: v1alpha1.HoldZoneMove, ID: zone, Cordon: true}, s.ZoneCordoned != "")
	}
	if s.LiveChangeCordoned != "" {
		take(v1alpha1.NodeHold{Kind: v1alpha1.HoldLiveChange, ID: s.LiveChangeCordoned, Cordon: true}, true)
	}
	if s.ZoneCordoned != "" || s.LiveChangeCordoned != "" {
		s.ZoneCordoned, s.LiveChangeCordoned, changed = "", "", true
	}
	return changed
}

// Of returns the node's hold of kind k, if it has one.
func Of(s v1alpha1.NetshiftNodeStateStatus, k v1alpha1.HoldKind) (v1alpha1.NodeHold, bool) {
	i := slices.IndexFunc(s.Holds, func(h v1alpha1.NodeHold) bool { return h.Kind == k })
	if i < 0 {
		return v1alpha1.NodeHold{}, false
	}
	return s.Holds[i], true
}

// Cordon is what to do with a node's cordon (spec.unschedulable) after a
// change to its holds.
type Cordon int

const (
	// Leave the cordon as it is.
	Leave Cordon = iota
	// Set: cordon the node (after the status is written).
	Set
	// Lift: uncordon the node (before the status is written).
	Lift
)

// Take records hold h on s (replacing the node's hold of the same kind: one
// per kind) and says what to do with the cordon, given whether the node is
// cordoned now. A node netshift cordons is netshift's to uncordon; a node
// already cordoned by someone else stays theirs. A node whose owned cordon
// is gone while a hold still needs it (uncordoned by hand, or a crash between
// the record and the cordon) is cordoned again.
func Take(s *v1alpha1.NetshiftNodeStateStatus, h v1alpha1.NodeHold, unschedulable bool, now time.Time) Cordon {
	if old, ok := Of(*s, h.Kind); ok && old.ID == h.ID {
		h.Since = old.Since // the same holder again: it has held the node since then
	} else if h.Since.IsZero() {
		h.Since = metav1.NewTime(now)
	}
	s.Holds = slices.DeleteFunc(s.Holds, func(o v1alpha1.NodeHold) bool { return o.Kind == h.Kind })
	s.Holds = append(s.Holds, h)
	slices.SortFunc(s.Holds, func(a, b v1alpha1.NodeHold) int { return compare(a.Kind, b.Kind) })
	return wanted(s, unschedulable)
}

// Release gives back the node's hold of kind k if it is the holder id's
// ("" any holder of that kind) and says what to do with the cordon: lifted
// when netshift owns it and no remaining hold needs it.
func Release(s *v1alpha1.NetshiftNodeStateStatus, k v1alpha1.HoldKind, id string, unschedulable bool) Cordon {
	s.Holds = slices.DeleteFunc(s.Holds, func(h v1alpha1.NodeHold) bool { return h.Kind == k && (id == "" || h.ID == id) })
	return wanted(s, unschedulable)
}

// wanted settles the cordon's owner for the holds s now carries and returns
// the change to make to the node.
func wanted(s *v1alpha1.NetshiftNodeStateStatus, unschedulable bool) Cordon {
	need := slices.ContainsFunc(s.Holds, func(h v1alpha1.NodeHold) bool { return h.Cordon })
	switch {
	case need && !unschedulable:
		s.CordonedByNetshift = true
		return Set
	case need && unschedulable:
		return Leave // ours already, or someone else's: either way it stays
	case s.CordonedByNetshift:
		s.CordonedByNetshift = false
		if unschedulable {
			return Lift
		}
	}
	return Leave
}

// Count is how many nodes are busy in each pool: owner maps a node to its
// pool; a node whose pool is unknown counts nowhere.
func Count(owner map[string]string, states map[string]v1alpha1.NetshiftNodeStateStatus) map[string]int {
	n := map[string]int{}
	for node, s := range states {
		if pool, ok := owner[node]; ok && Busy(s) {
			n[pool]++
		}
	}
	return n
}

// kindOrder keeps a node's holds in one order, so a status that did not
// change is written the same.
var kindOrder = []v1alpha1.HoldKind{v1alpha1.HoldDrain, v1alpha1.HoldZoneMove, v1alpha1.HoldLiveChange}

func compare(a, b v1alpha1.HoldKind) int {
	return slices.Index(kindOrder, a) - slices.Index(kindOrder, b)
}
