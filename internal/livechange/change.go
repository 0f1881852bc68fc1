// Package livechange is the pure core of a live MTU or tunnel port change:
// which change an edit asks for, the order and timing of each node's steps,
// and when the change moves to its next phase. The operator's controller and
// the agents read, call these functions, and write.
package livechange

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

// Wanted is the spec's values, with defaults applied.
type Wanted struct {
	MTU, VXLANPort, GenevePort, UnderlayMTU int32
	Encapsulation                           v1alpha1.Encapsulation
}

// FromSpec reads what the user wants.
func FromSpec(s v1alpha1.NetshiftNetworkSpec) Wanted {
	w := Wanted{VXLANPort: s.VXLANPort, GenevePort: s.GenevePort, UnderlayMTU: s.Underlay.MTU, Encapsulation: s.Encapsulation}
	if s.MTU != nil {
		w.MTU = *s.MTU
	}
	if w.VXLANPort == 0 {
		w.VXLANPort = 4789
	}
	if w.GenevePort == 0 {
		w.GenevePort = 6081
	}
	if w.UnderlayMTU == 0 {
		w.UnderlayMTU = 1500
	}
	if w.Encapsulation == "" {
		w.Encapsulation = v1alpha1.EncapVXLAN
	}
	return w
}

// Change is one live change.
type Change struct {
	Kind     v1alpha1.ChangeKind
	From, To int32
	// NodeSteps is false for a port of an encapsulation the cluster does not use: recorded, no step.
	NodeSteps bool
}

// Next returns the change the spec asks for against what is applied, if any.
// An MTU change goes first; the API server refuses an edit that changes both.
func Next(w Wanted, applied v1alpha1.AppliedNetwork) (Change, bool) {
	switch {
	case w.MTU != 0 && w.MTU != applied.MTU:
		return Change{Kind: v1alpha1.ChangeMTU, From: applied.MTU, To: w.MTU, NodeSteps: true}, true
	case w.VXLANPort != applied.VXLANPort:
		return Change{Kind: v1alpha1.ChangeVXLANPort, From: applied.VXLANPort, To: w.VXLANPort, NodeSteps: w.Encapsulation == v1alpha1.EncapVXLAN}, true
	case w.GenevePort != applied.GenevePort:
		return Change{Kind: v1alpha1.ChangeGenevePort, From: applied.GenevePort, To: w.GenevePort, NodeSteps: w.Encapsulation == v1alpha1.EncapGeneve}, true
	}
	return Change{}, false
}

// NextAttempt says whether change c, asked by the spec at generation gen,
// starts now, and as which attempt, given the last change. The same change
// that failed before starts again after its retry time when it failed in its
// preconditions (it touched nothing), else, failed in its steps, rolled back
// or aborted, only once the spec was edited since it was asked for. wait is
// how long until the retry time when it does not start.
func NextAttempt(last *v1alpha1.NetworkChange, c Change, gen, observed int64, now time.Time) (attempt int32, wait time.Duration, start bool) {
	again := last != nil && (last.Phase == v1alpha1.PhaseFailed || last.Phase == v1alpha1.PhaseAborted || last.Phase == v1alpha1.PhaseRolledBack) &&
		last.Kind == c.Kind && last.To == c.To
	switch {
	case !again:
		return 1, 0, true
	case last.RetryAt != nil && last.RetryAt.After(now):
		return 0, last.RetryAt.Sub(now), false
	case last.RetryAt != nil:
		return last.Attempt + 1, 0, true
	}
	asked := last.Generation
	if asked == 0 {
		asked = observed // recorded by an older operator, which kept no generation
	}
	return 1, 0, gen > asked
}

// PlannedUnderAnotherLeader says whether the cluster's plan for change id,
// before its T0, names another time endpoint than this operator's (timeURL):
// the clock its agents measured is another operator's, and T0 would be set
// on this one's. Answers measured against two clocks do not bound the nodes'
// clocks to each other, so the preconditions are checked again.
func PlannedUnderAnotherLeader(plan *v1alpha1.LiveChangePlan, id, timeURL string) bool {
	return plan != nil && plan.ID == id && plan.T0 == nil && plan.TimeURL != timeURL
}

// CordonsSilentNodes says whether a node the change leaves behind silent is
// cordoned until it catches up. Only an MTU change needs it: a pod set up
// there gets the MTU the node's own configuration still gives, which, after
// the others' steps, their pods' path may no longer carry. A tunnel port is
// the node's alone. No node is cordoned during the steps: each agent holds
// its node's pod set-ups off from just before its first step to the end of
// its last.
func (c Change) CordonsSilentNodes() bool { return c.Kind == v1alpha1.ChangeMTU }

// Apply returns applied with the change's new value.
func (c Change) Apply(applied v1alpha1.AppliedNetwork) v1alpha1.AppliedNetwork {
	switch c.Kind {
	case v1alpha1.ChangeMTU:
		applied.MTU = c.To
	case v1alpha1.ChangeVXLANPort:
		applied.VXLANPort = c.To
	case v1alpha1.ChangeGenevePort:
		applied.GenevePort = c.To
	}
	return applied
}

// NodeSteps are the steps a network plugin's driver changes a node with.
type NodeSteps struct {
	// Path are an MTU change's steps from the pods outward: what the pods
	// send first, then each hop of the path they send through.
	Path []v1alpha1.StepAction
	// Tunnel are a tunnel port change's steps, in the order they run.
	Tunnel []v1alpha1.StepAction
}

// Schedule is a node's steps for a change, at fixed offsets from T0 spaced
// by spacing. Lowering the MTU runs the driver's path from the pods outward:
// what pods send shrinks first, then the path; raising it widens the path
// first and the pods last, so no packet is ever larger than the narrowest hop.
// The last step, netshift's own, writes the node's network configuration, so
// the pods created after the change get the new values (an MTU change's
// agents hold the pods' set-ups off until then). A change without node steps (a port the cluster
// holds in a record of its own, or of an encapsulation it does not use) has
// that step only. Which interfaces each step sets is the node's to find when
// it runs: a step with nothing to set on a node changes nothing there.
func Schedule(c Change, s NodeSteps, spacing time.Duration) []v1alpha1.ScheduledStep {
	var order []v1alpha1.StepAction
	switch {
	case !c.NodeSteps:
	case c.Kind != v1alpha1.ChangeMTU:
		order = s.Tunnel
	case c.To > c.From:
		order = slices.Clone(s.Path)
		slices.Reverse(order)
	default:
		order = s.Path
	}
	return timed(order, c.To, spacing)
}

// timed puts steps at fixed offsets from T0, spacing apart, each setting
// value, and netshift's own NetworkConfig step one spacing after the last.
func timed(order []v1alpha1.StepAction, value int32, spacing time.Duration) []v1alpha1.ScheduledStep {
	at := func(i int) int32 { return int32(time.Duration(i) * spacing / time.Millisecond) }
	steps := make([]v1alpha1.ScheduledStep, 0, len(order)+1)
	for i, action := range order {
		steps = append(steps, v1alpha1.ScheduledStep{Action: action, OffsetMs: at(i), Value: value})
	}
	return append(steps, v1alpha1.ScheduledStep{Action: v1alpha1.StepNetworkConfig, OffsetMs: at(len(order)), Value: value})
}

// NodeConfig is the configuration a node's new pods get once applied is in force.
func NodeConfig(applied v1alpha1.AppliedNetwork, encap v1alpha1.Encapsulation) v1alpha1.NodeNetworkConfig {
	port := applied.VXLANPort
	if encap == v1alpha1.EncapGeneve {
		port = applied.GenevePort
	}
	return v1alpha1.NodeNetworkConfig{MTU: applied.MTU, Encapsulation: encap, TunnelPort: port}
}

// Progress is what the operator does next with a change in progress.
type Progress struct {
	// Silent are the nodes that did not report their steps by the deadline after T0: their
	// agents converge them when they come back.
	Silent []string
	// Held are the nodes whose step failed and that stay cordoned for a person (policy None).
	Held []string
	// RollBack are the nodes to roll back live (phase RollingBack); RollBackAll says the change
	// stops everywhere, RollBack then being every node.
	RollBack    []string
	RollBackAll bool
	// Reason names the failed nodes and steps a rollback is for.
	Reason  string
	Phase   v1alpha1.ChangePhase
	Ready   int32
	Applied int32
	Failed  int32
	Message string
}

// Deadlines bound how long a change waits for silent agents.
type Deadlines struct {
	// Preconditions: a node that has not answered by then cancels the change, nothing touched.
	Preconditions time.Time
	// Steps: a node that has not reported its steps by then fails the change (the others have
	// applied theirs at T0 and are not held back).
	Steps time.Time
}

// Evaluate decides the change's next phase from every node's report.
// reports holds, per node taking part, its report for this change (nil when
// the agent has not answered yet); policy says what failed steps lead to.
func Evaluate(phase v1alpha1.ChangePhase, reports map[string]*v1alpha1.LiveChangeReport, now time.Time, d Deadlines, policy Policy) Progress {
	p := Progress{Phase: phase}
	var problems, failed, failedNodes, waiting []string
	nodes := sortedNodes(reports)
	for _, n := range nodes {
		r := reports[n]
		switch {
		case r == nil:
			waiting = append(waiting, n)
		case len(r.Problems) > 0:
			problems = append(problems, fmt.Sprintf("node %s: %s", n, strings.Join(r.Problems, "; ")))
		case r.Done && r.Failed:
			p.Ready++
			p.Failed++
			failed = append(failed, fmt.Sprintf("node %s: %s", n, firstError(r)))
			failedNodes = append(failedNodes, n)
		case r.Done:
			p.Ready++
			p.Applied++
		case r.Ready:
			p.Ready++
			if phase == v1alpha1.PhaseScheduled {
				waiting = append(waiting, n) // passed its preconditions, steps not all run yet
			}
		default:
			waiting = append(waiting, n)
		}
	}
	p.Failed += int32(len(problems))
	switch phase {
	case v1alpha1.PhasePreconditions:
		switch {
		case len(problems) > 0:
			p.Phase, p.Message = v1alpha1.PhaseFailed, "preconditions failed, nothing was changed: "+listed(problems, "; ")
		case len(waiting) > 0 && !d.Preconditions.IsZero() && now.After(d.Preconditions):
			p.Failed += int32(len(waiting))
			p.Phase, p.Message = v1alpha1.PhaseFailed, "preconditions failed, nothing was changed: no answer from "+listed(waiting, ", ")
		case len(waiting) == 0:
			p.Phase, p.Message = v1alpha1.PhaseScheduled, "every node passed its preconditions"
		default:
			p.Message = "checking preconditions; waiting for " + listed(waiting, ", ")
		}
	case v1alpha1.PhaseScheduled:
		p.scheduled(nodes, failedNodes, failed, waiting, problems, reports, now, d, policy)
	}
	return p
}

// scheduled decides a change past T0. A rollback starts as soon as its
// outcome is decided (more nodes failed than the policy allows: nodes still
// to report cannot undo that), silent nodes joining it when they come back;
// otherwise the change waits for every node's report until the deadline. A
// node that joined after T0 and failed its preconditions touched nothing and
// is held for a person: the change does not succeed without it.
func (p *Progress) scheduled(nodes, failedNodes, failed, waiting, problems []string, reports map[string]*v1alpha1.LiveChangeReport,
	now time.Time, d Deadlines, policy Policy) {
	late := len(waiting) > 0 && !d.Steps.IsZero() && now.After(d.Steps)
	decided := int32(len(failedNodes)) > policy.MaxFailed
	joined := problemNodes(reports)
	switch {
	case len(failedNodes) > 0 && policy.Action != v1alpha1.FailureNone && (decided || len(waiting) == 0 || late):
		p.rollBack(nodes, failedNodes, failed, waiting, policy)
		if !p.RollBackAll {
			// Off the new value too: rolled back with the failed nodes (a rollback of no step
			// changes nothing), then rebooted or held as they are.
			p.RollBack = append(p.RollBack, joined...)
		}
	case len(waiting) > 0 && !late:
		p.Message = "applying; waiting for " + listed(waiting, ", ")
	case late:
		p.Failed += int32(len(waiting))
		p.Silent, p.Held = waiting, append(failedNodes, joined...)
		p.Phase, p.Message = v1alpha1.PhaseFailed, "no step report from "+listed(append(waiting, failed...), ", ")+
			" (the other nodes applied theirs at T0)"
	case len(failed) > 0:
		p.Held = append(failedNodes, joined...)
		p.Phase, p.Message = v1alpha1.PhaseFailed, "steps failed: "+listed(failed, "; ")+
			"; the nodes stay cordoned for a person (spec.onFailure.action None)"
	case len(problems) > 0:
		p.Held = joined
		p.Phase, p.Message = v1alpha1.PhaseFailed, "failed their preconditions after T0 was set (joined late, or found their clock off when their agent restarted), "+
			"touching nothing; held cordoned for a person: "+listed(problems, "; ")
	default:
		p.Phase, p.Message = v1alpha1.PhaseSucceeded, "every node applied every step"
	}
}

// problemNodes are the nodes whose report names failed preconditions.
func problemNodes(reports map[string]*v1alpha1.LiveChangeReport) []string {
	var out []string
	for _, n := range sortedNodes(reports) {
		if r := reports[n]; r != nil && len(r.Problems) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// rollBack decides the rollback after failed steps: the failed nodes alone
// while they are within the policy's limit, every node past it. A node silent
// past its deadline is rolled back with every node (its agent runs the
// rollback late), or else left to converge forward.
func (p *Progress) rollBack(nodes, failedNodes, failed, silent []string, policy Policy) {
	p.Phase = v1alpha1.PhaseRollingBack
	p.Reason = "steps failed: " + listed(failed, "; ")
	// Past the limit the failure is systematic; with no node on the new value, there is
	// nothing for the change to complete on either.
	p.RollBackAll = int32(len(failedNodes)) > policy.MaxFailed || p.Applied == 0
	if p.RollBackAll {
		p.RollBack = nodes
		p.Message = fmt.Sprintf("steps failed on %d nodes (spec.onFailure.maxFailedNodes: %d), %d applied the change: stopping it and rolling every node back live: %s",
			len(failedNodes), policy.MaxFailed, p.Applied, listed(failed, "; "))
		return
	}
	p.RollBack, p.Silent = failedNodes, silent
	p.Message = fmt.Sprintf("steps failed on %d nodes, within spec.onFailure.maxFailedNodes (%d): rolling them back live, the others keep the new value: %s",
		len(failedNodes), policy.MaxFailed, listed(failed, "; "))
}

func sortedNodes[T any](m map[string]T) []string {
	nodes := make([]string, 0, len(m))
	for n := range m {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	return nodes
}

func firstError(r *v1alpha1.LiveChangeReport) string {
	for _, s := range r.Steps {
		if s.Error != "" {
			return fmt.Sprintf("%s: %s", s.Action, s.Error)
		}
	}
	return "a step failed"
}

// NextLook is how long from now an active change is next looked at when no
// report comes: at its next deadline or T0 (zero when unset), or after
// heartbeat if none is sooner. Reports come as watch events and are looked at
// as they come, so looking more often only adds reads of every node, in the
// very moments the datapaths need the CPU.
func NextLook(now, t0 time.Time, d Deadlines, heartbeat time.Duration) time.Duration {
	wait := heartbeat
	for _, t := range []time.Time{t0, d.Preconditions, d.Steps} {
		if t.After(now) {
			wait = min(wait, t.Sub(now))
		}
	}
	return wait
}

// maxListed is how many nodes (or nodes' problems) a message names: a status
// is rewritten on every report, and at thousands of nodes a message naming
// them all would cost more than the change; the status's counts and lists
// (converging, held, rollback.nodes) are whole.
const maxListed = 10

// listed joins the first maxListed items with sep, and says how many more there are.
func listed(items []string, sep string) string {
	if len(items) <= maxListed {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(items[:maxListed], sep), sep, len(items)-maxListed)
}

// Answered is how many nodes have answered what the change waits for in
// phase: their preconditions before T0, all their steps (or their
// rollback's) after.
func Answered(phase v1alpha1.ChangePhase, reports map[string]*v1alpha1.LiveChangeReport) int {
	n := 0
	for _, r := range reports {
		if r != nil && (phase == v1alpha1.PhasePreconditions || r.Done) {
			n++
		}
	}
	return n
}
