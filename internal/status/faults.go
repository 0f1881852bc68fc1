package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"netshift.io/netshift/api/v1alpha1"
)

// The words liveChangeProgress puts in a node's LiveChange when its part
// failed or cannot start; Faults looks for them.
const (
	markFailed  = "FAILED"
	markBlocked = "BLOCKED"
)

// Faults are what the report shows that needs a person, one phrase each:
// `netshift status` exits 3 when there is any. The text flags each of them
// too: a PROBLEM or DEGRADED line, a change rolling back, a zone phase
// InvalidConfig or a held move, a node held, silent, FAILED, BLOCKED, its
// sync Failed or its drain given up or over its timeout. What is merely in
// progress (a drain waiting for its slot, a change checking) is no fault.
func (r Report) Faults() []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, "NetshiftNodePool: "+p)
	}
	if ch := r.Change; ch != nil {
		switch {
		case ch.Degraded != "":
			out = append(out, "change degraded: "+ch.Degraded)
		case ch.Phase == v1alpha1.PhaseRollingBack:
			out = append(out, fmt.Sprintf("change %s is rolling back: nodes failed their steps", ch.ID))
		}
	}
	if z := r.Zones; z != nil {
		if z.Phase == v1alpha1.ReasonInvalidConfig {
			out = append(out, "zones: invalid configuration: "+z.Message)
		}
		for _, h := range z.Held {
			out = append(out, fmt.Sprintf("node %s: zone move held: %s", h.Node, h.Reason))
		}
	}
	for _, p := range r.Pools {
		for _, n := range p.Nodes {
			if f := nodeFault(n, r.Change); f != "" {
				out = append(out, "node "+n.Name+": "+f)
			}
		}
	}
	return out
}

// nodeFault is the worst of what needs a person on one node, or "": one
// phrase per node, since one cause (a failed step) shows in several fields.
func nodeFault(n Node, ch *Change) string {
	switch {
	case ch != nil && slices.Contains(ch.Held, n.Name):
		return cmp.Or(n.LiveChange, "held for a person")
	case ch != nil && slices.Contains(ch.Converging, n.Name):
		return fmt.Sprintf("its agent did not report its part of change %s in time", ch.ID)
	case ch != nil && slices.Contains(ch.Down, n.Name) && strings.Contains(n.LiveChange, markFailed):
		return "catch-up: " + n.LiveChange
	case strings.HasPrefix(n.LiveChange, markBlocked) || strings.Contains(n.LiveChange, markFailed):
		return "change: " + n.LiveChange
	case n.SyncStatus == string(v1alpha1.SyncFailed):
		return strings.TrimSuffix(fmt.Sprintf("operation %s failed: %s", n.Operation, n.LastSyncError), ": ")
	case n.DrainProblem != "":
		return "drain " + n.DrainProblem
	}
	return ""
}
