package hold

import (
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

// NodeAnnotation, on a Node, records a live change's hold taken in the same
// write as the node's cordon: its value is the change's ID. Operators that
// cordoned every node for an MTU change recorded their holds there (the
// ledger's record in the node's state would have been two more writes a
// node); this one cordons no node for a change, and reads the record only
// to give such a hold back, with the uncordon, in one write. Only netshift's
// operator may set or remove it (an admission policy).
const NodeAnnotation = "netshift.io/live-change-hold"

// NodeRelease is what giving back a live change's hold recorded on the Node
// takes.
type NodeRelease struct {
	// Uncordon: lift the node's cordon, in the write that removes the annotation.
	Uncordon bool
	// Record: write the state first, with CordonedByNetshift as s now has it.
	Record bool
}

// ReleaseOnNode gives back a live change's hold recorded on the Node (the
// node cordoned for it). A drain or a zone move that took the node since
// found it cordoned and took it as someone else's: if one of them still needs
// the cordon, it stays, and becomes netshift's in s (recorded before the
// annotation goes, so that their release lifts it); otherwise it is lifted,
// and a stale CordonedByNetshift is cleared.
func ReleaseOnNode(s *v1alpha1.NetshiftNodeStateStatus) NodeRelease {
	need := false
	for _, h := range s.Holds {
		need = need || h.Cordon
	}
	if need {
		r := NodeRelease{Record: !s.CordonedByNetshift}
		s.CordonedByNetshift = true
		return r
	}
	r := NodeRelease{Uncordon: true, Record: s.CordonedByNetshift}
	s.CordonedByNetshift = false
	return r
}

// AdoptNode moves a live change's hold recorded on the Node (id, from its
// annotation) into s: the hold, and the cordon netshift's. Another hold is
// about to be taken or given back on the node, and every decision must read
// one ledger. It reports whether s changed; the caller writes s, then
// removes the annotation.
func AdoptNode(s *v1alpha1.NetshiftNodeStateStatus, id string, now time.Time) bool {
	if id == "" {
		return false
	}
	changed := false
	if h, ok := Of(*s, v1alpha1.HoldLiveChange); !ok || h.ID != id {
		Take(s, v1alpha1.NodeHold{Kind: v1alpha1.HoldLiveChange, ID: id, Cordon: true}, true, now)
		changed = true
	}
	if !s.CordonedByNetshift {
		s.CordonedByNetshift, changed = true, true
	}
	return changed
}
