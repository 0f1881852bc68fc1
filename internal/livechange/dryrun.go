package livechange

import (
	"fmt"
	"strings"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

// DryRun returns the change spec.dryRun asks to check against what is
// applied, and whether one is to start now: a dry run runs once for the spec
// generation that asked for it, and never while the spec itself asks for a
// change (that change goes first; its own preconditions are the check).
func DryRun(spec v1alpha1.NetshiftNetworkSpec, generation int64, applied v1alpha1.AppliedNetwork, last *v1alpha1.NetworkChange) (Change, bool) {
	d := spec.DryRun
	if d == nil || (last != nil && last.DryRun && last.Generation == generation) {
		return Change{}, false
	}
	if _, pending := Next(FromSpec(spec), applied); pending {
		return Change{}, false
	}
	w := FromSpec(spec)
	switch {
	case d.MTU != nil:
		w.MTU = *d.MTU
	case d.VXLANPort != nil:
		w.VXLANPort = *d.VXLANPort
	case d.GenevePort != nil:
		w.GenevePort = *d.GenevePort
	default:
		return Change{}, false
	}
	c, ok := Next(w, applied)
	if !ok {
		// The value in force already: a check of nothing, recorded as such.
		c = Change{Kind: dryRunKind(d), From: dryRunValue(d), To: dryRunValue(d)}
	}
	return c, true
}

func dryRunKind(d *v1alpha1.DryRunRequest) v1alpha1.ChangeKind {
	switch {
	case d.MTU != nil:
		return v1alpha1.ChangeMTU
	case d.VXLANPort != nil:
		return v1alpha1.ChangeVXLANPort
	}
	return v1alpha1.ChangeGenevePort
}

func dryRunValue(d *v1alpha1.DryRunRequest) int32 {
	switch {
	case d.MTU != nil:
		return *d.MTU
	case d.VXLANPort != nil:
		return *d.VXLANPort
	}
	return *d.GenevePort
}

// EvaluateDryRun is where a dry run stands: over (phase Checked) once every
// node answered or the answer deadline passed, a complete report either way
// (unlike a change, it does not stop at the first node with a problem).
func EvaluateDryRun(reports map[string]*v1alpha1.LiveChangeReport, now time.Time, d Deadlines) Progress {
	p := Progress{Phase: v1alpha1.PhasePreconditions}
	var problems, waiting []string
	for _, n := range sortedNodes(reports) {
		switch r := reports[n]; {
		case r == nil:
			waiting = append(waiting, n)
		case len(r.Problems) > 0:
			problems = append(problems, fmt.Sprintf("node %s: %s", n, strings.Join(r.Problems, "; ")))
		case r.Ready:
			p.Ready++
		default:
			waiting = append(waiting, n)
		}
	}
	p.Failed = int32(len(problems))
	late := !d.Preconditions.IsZero() && now.After(d.Preconditions)
	if len(waiting) > 0 && !late {
		p.Message = "dry run: checking preconditions; waiting for " + strings.Join(waiting, ", ")
		return p
	}
	p.Phase = v1alpha1.PhaseChecked
	if late {
		p.Failed += int32(len(waiting))
		for _, n := range waiting {
			problems = append(problems, fmt.Sprintf("node %s: no answer", n))
		}
	}
	if len(problems) == 0 {
		p.Message = "dry run: every node passed its preconditions; nothing was changed"
		return p
	}
	p.Message = fmt.Sprintf("dry run: %d of %d nodes would stop the change: %s; nothing was changed",
		p.Failed, len(reports), strings.Join(problems, "; "))
	return p
}
