package livechange

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
)

// DefaultDownNodeGrace is how long a node may be NotReady before a change
// goes ahead without it, when spec.downNodeGrace is not set.
const DefaultDownNodeGrace = time.Minute

// NodeFacts is what the operator reads of a Node to know whether a change is
// for it.
type NodeFacts struct {
	Name string
	// RunsAgent says whether netshift's agent can run there: a Linux node inside the agent
	// DaemonSet's placement.
	RunsAgent bool
	// Ready is the Node's Ready condition; Since is when it last changed (or, with no condition
	// yet, when the Node was made).
	Ready bool
	Since time.Time
}

// Down says whether the node has been NotReady for grace or longer.
func (f NodeFacts) Down(now time.Time, grace time.Duration) bool {
	return !f.Ready && now.Sub(f.Since) >= grace
}

// Taking is which of a cluster's nodes a change is for.
type Taking struct {
	// In are the nodes the change waits for: their agents answer for their preconditions and
	// report their steps.
	In []string
	// Outside run no agent (Windows, or outside the agent DaemonSet's placement): no change is
	// for them, and they hold none back.
	Outside []string
	// Down have been NotReady for longer than the grace, or are still to catch up with an
	// earlier change: the change goes ahead without them, and each is brought to the applied
	// values once it is Ready again (CatchUpPlan).
	Down []string
}

// WhoTakesPart sorts nodes into those a change is for and those it is not:
// a node that cannot answer never holds the others back. behind are the
// nodes still to catch up with an earlier change: Down until they have,
// whether or not they are Ready again.
func WhoTakesPart(nodes []NodeFacts, now time.Time, grace time.Duration, behind []string) Taking {
	var t Taking
	for _, n := range nodes {
		switch {
		case !n.RunsAgent:
			t.Outside = append(t.Outside, n.Name)
		case slices.Contains(behind, n.Name), n.Down(now, grace):
			t.Down = append(t.Down, n.Name)
		default:
			t.In = append(t.In, n.Name)
		}
	}
	slices.Sort(t.In)
	slices.Sort(t.Outside)
	slices.Sort(t.Down)
	return t
}

// Union is the nodes of both lists, sorted, without repeats: the status's
// lists of nodes (down, late, held, converging) only ever gain nodes this way.
func Union(nodes, more []string) []string {
	out := slices.Concat(nodes, more)
	slices.Sort(out)
	return slices.Compact(out)
}

// CatchUpPrefix starts the ID of a plan that brings a node that was down back
// to the applied values.
const CatchUpPrefix = "catchup-"

// IsCatchUp says whether plan id is a node's catch-up.
func IsCatchUp(id string) bool {
	return len(id) > len(CatchUpPrefix) && id[:len(CatchUpPrefix)] == CatchUpPrefix
}

// CatchUpNeeded is the change that brings a node whose agent reports
// observed to the applied values (the MTU first, then the tunnel port of the
// encapsulation in use); ok is false when the node carries them already. A
// value the node does not know (no pod, no tunnel yet) is taken as in step.
func CatchUpNeeded(observed *v1alpha1.ObservedNetwork, applied v1alpha1.AppliedNetwork, encap v1alpha1.Encapsulation) (c Change, ok bool) {
	if observed == nil {
		return Change{}, false
	}
	port := NodeConfig(applied, encap).TunnelPort
	kind := v1alpha1.ChangeVXLANPort
	if encap == v1alpha1.EncapGeneve {
		kind = v1alpha1.ChangeGenevePort
	}
	switch {
	case observed.MTU > 0 && observed.MTU != applied.MTU:
		return Change{Kind: v1alpha1.ChangeMTU, From: observed.MTU, To: applied.MTU, NodeSteps: true}, true
	case observed.TunnelPort > 0 && observed.TunnelPort != port:
		return Change{Kind: kind, From: observed.TunnelPort, To: port, NodeSteps: true}, true
	}
	return Change{}, false
}

// CatchUpID names node's catch-up of change c.
func CatchUpID(c Change) string {
	return fmt.Sprintf("%s%s-%d", CatchUpPrefix, kindWord(c.Kind), c.To)
}

func kindWord(k v1alpha1.ChangeKind) string {
	switch k {
	case v1alpha1.ChangeMTU:
		return "mtu"
	case v1alpha1.ChangeVXLANPort:
		return "vxlanport"
	}
	return "geneveport"
}

// CatchUpPlan is the plan of a node alone that brings it from what it carries
// to the applied values: change c's steps at t0, ordered as for any change,
// with the applied network written last. It has no clock spread nor report
// spread: the node runs it alone.
func CatchUpPlan(c Change, s NodeSteps, spacing time.Duration, t0 time.Time, plugin string, applied v1alpha1.AppliedNetwork,
	encap v1alpha1.Encapsulation, underlayMTU int32) *v1alpha1.LiveChangePlan {
	start := metav1.NewMicroTime(t0)
	network := NodeConfig(applied, encap)
	return &v1alpha1.LiveChangePlan{ID: CatchUpID(c), Kind: c.Kind, From: c.From, To: c.To, Plugin: plugin, UnderlayMTU: underlayMTU,
		Encapsulation: encap, T0: &start, Network: &network, Steps: Schedule(c, s, spacing)}
}

// CatchingUp is where a node left behind stands, as the operator reads it.
type CatchingUp struct {
	Name string
	// Back says whether the node is Ready and runs its agent again.
	Back bool
	// Observed is the network its agent last reported.
	Observed *v1alpha1.ObservedNetwork
	// Plan is its own plan, Report its agent's report (either nil).
	Plan   *v1alpha1.LiveChangePlan
	Report *v1alpha1.LiveChangeReport
}

// CatchUps is what the operator does next with the nodes left behind.
type CatchUps struct {
	// InStep caught up (or were never off): they leave status.change.down, their own plan removed.
	InStep []string
	// Start need a catch-up plan of the change named, within their pools' limits.
	Start map[string]Change
	// Running are running their catch-up; Failed failed it (node -> why).
	Running []string
	Failed  map[string]string
}

// DecideCatchUps follows the nodes a change went ahead without: one still
// down waits; one back gets a catch-up plan, one change at a time (the MTU
// first), each judged from its report and then from what the node observed
// after it; it is in step once a catch-up's report shows the applied values.
// A node back whose last report shows them already still runs one (of the
// MTU, to the applied MTU): that report may be from before it went down.
func DecideCatchUps(nodes []CatchingUp, applied v1alpha1.AppliedNetwork, encap v1alpha1.Encapsulation) CatchUps {
	d := CatchUps{Start: map[string]Change{}, Failed: map[string]string{}}
	for _, n := range nodes {
		if !n.Back {
			continue
		}
		if n.Plan != nil && IsCatchUp(n.Plan.ID) {
			rep := n.Report
			switch {
			case rep == nil || rep.ID != n.Plan.ID || !rep.Done && len(rep.Problems) == 0:
				d.Running = append(d.Running, n.Name)
				continue
			case len(rep.Problems) > 0:
				d.Failed[n.Name] = fmt.Sprintf("catch-up %s: preconditions failed: %s", rep.ID, listed(rep.Problems, "; "))
				continue
			case rep.Failed:
				d.Failed[n.Name] = fmt.Sprintf("catch-up %s: %s", rep.ID, firstError(rep))
				continue
			}
		}
		// A catch-up's report carries what the node observed after its steps; any earlier report
		// may be from before the node went down (an agent that was stopped reports again only
		// when it looks, up to a minute later), so it is refreshed by a catch-up first.
		fresh := n.Report != nil && IsCatchUp(n.Report.ID) && n.Report.Done
		c, off := CatchUpNeeded(n.Observed, applied, encap)
		switch {
		case !off && fresh:
			d.InStep = append(d.InStep, n.Name)
		case !off:
			d.Start[n.Name] = Change{Kind: v1alpha1.ChangeMTU, From: applied.MTU, To: applied.MTU, NodeSteps: true}
		case fresh && n.Plan != nil && n.Plan.ID == CatchUpID(c):
			d.Failed[n.Name] = fmt.Sprintf("catch-up %s ran, yet the node reports %s %d", n.Plan.ID, c.Kind, c.From)
		default:
			d.Start[n.Name] = c
		}
	}
	return d
}
