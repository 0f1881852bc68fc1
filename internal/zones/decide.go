package zones

import (
	"fmt"
	"sort"
	"strings"

	"netshift.io/netshift/internal/rollout"
)

// Node is a node as the zone decisions see it.
type Node struct {
	Name string
	// Zone is its k8s.ovn.org/zone-name annotation, "" when it has none.
	Zone string
	// Ready is the node's Ready condition: a node that is down cannot move.
	Ready bool
	// Target is the zone the node is labelled for (k8s.ovn.org/zone-name, the
	// zone its network plugin pod joins when it starts), "" when it has no
	// label: a move is in progress while Target differs from Zone.
	Target string
	// Held says why the node's move does not finish (its plugin pod
	// crash-loops, is not ready, or has not annotated the node in time); ""
	// while it goes well or no move is in progress.
	Held string
}

// Moving says whether the node has a move in progress.
func (n Node) Moving() bool { return n.Target != "" && n.Target != n.Zone }

// Current computes the layout from the nodes' annotations.
func Current(nodes []Node) Mode {
	if len(nodes) == 0 {
		return Undefined
	}
	global, own, none := 0, 0, 0
	for _, n := range nodes {
		switch n.Zone {
		case "":
			none++
		case GlobalZone:
			global++
		case n.Name:
			own++
		}
	}
	switch len(nodes) {
	case none:
		return Legacy
	case global:
		return Single
	case own:
		return Multi
	}
	return Undefined
}

// ZoneFor is the zone a node belongs in under a layout.
func ZoneFor(m Mode, node string) string {
	if m == Multi {
		return node
	}
	return GlobalZone
}

// Central is the state of the central side: the central NB and SB databases
// and ovn-northd that the legacy and single-zone layouts run on.
type Central string

const (
	CentralRunning Central = "Running"
	CentralRetired Central = "Retired"
)

// CentralAction is what to do with the central side.
type CentralAction string

const (
	CentralNone   CentralAction = ""
	CentralEnsure CentralAction = "Ensure"
	CentralRetire CentralAction = "Retire"
	// CentralInterconnect: turn the plugin's interconnect on, restarting its
	// central side and its node pods with it (the first step out of legacy).
	CentralInterconnect CentralAction = "Interconnect"
)

// State is everything a decision needs.
type State struct {
	Nodes   []Node
	Config  Config
	Central Central
	// Pools owns the nodes and limits how many of a pool are busy at once.
	Pools rollout.Membership
	// Busy are the nodes held by something else that takes a slot of their pool (a drain): they
	// count against its limit, and a move of one of them takes no second slot.
	Busy map[string]bool
	// NoInterconnect: the network plugin runs without interconnect, which
	// makes the layout legacy whatever the nodes' annotations say (a plugin
	// that writes the annotation without interconnect names every node's
	// zone "global").
	NoInterconnect bool
	// Restarting says what of the plugin's pods is still restarting ("" when
	// they all run): no node moves, the central side is left as it is and the
	// rollout is not done until they run, so one step ends before the next
	// starts.
	Restarting string
	// Settling says which node's move the plugin's other nodes may still be
	// taking in ("" when none): like Restarting, it holds the next move and
	// the central side, so that no node's plugin pod restarts while its
	// node has yet to learn where another node went.
	Settling string
}

// Layout is the cluster's layout: legacy while the plugin runs without
// interconnect, else what the nodes' annotations say.
func Layout(s State) Mode {
	if s.NoInterconnect {
		return Legacy
	}
	return Current(s.Nodes)
}

// Decision is what to do now.
type Decision struct {
	Current Mode
	// Desired is where the cluster should end; Next is the layout it is
	// converging to now (single-zone on the way from legacy to multizone).
	Desired, Next Mode
	// WriteIntermediate: create the ConfigMap {singlezone, definitive: no}
	// that records the upgrade's single-zone step.
	WriteIntermediate bool
	// DeleteConfig: the upgrade is over; delete that ConfigMap.
	DeleteConfig bool
	Central      CentralAction
	// Move maps the nodes to start moving now to their new zone.
	Move map[string]string
	// Done: the cluster is in the desired layout and its final step is done.
	Done bool
	// Holding names why the rollout waits (a node down, an undefined layout
	// still rolling); "" when it does not.
	Holding string
	// Phase is the rollout's stage in words, for the status.
	Phase string
}

// Decide is the next step of the zone rollout. Towards multizone the nodes
// move first and the central side is retired last; towards single zone the
// central side comes first and the nodes join it. A node that is down holds
// the rollout at a safe point: the nodes that can move do, but the central
// side is neither retired while a node still needs it nor is the rollout
// reported done.
func Decide(s State) Decision {
	d := decide(s)
	if len(d.Move) == 0 && d.Central == CentralNone && !d.Done {
		return d
	}
	// Nothing moves, and nothing is done, while the plugin's pods restart or
	// its nodes take the last move in.
	switch {
	case s.Restarting != "":
		d.Holding = "waiting for the network plugin's pods to run: " + s.Restarting
	case s.Settling != "":
		d.Holding = s.Settling
	default:
		return d
	}
	d.Move, d.Central, d.Done, d.DeleteConfig = map[string]string{}, CentralNone, false, false
	d.Phase = "WaitingForPlugin"
	return d
}

func decide(s State) Decision {
	d := Decision{Current: Layout(s), Desired: s.Config.Desired(), Move: map[string]string{}}
	d.Next = d.Desired
	if d.Desired == Multi && (anyUnannotated(s.Nodes) || s.NoInterconnect) {
		// From the legacy layout multizone is reached through single zone; a
		// ConfigMap that netshift writes records that step, so that a restarted
		// operator, and a person reading the cluster, see where it stands.
		d.Next = Single
		d.WriteIntermediate = !s.Config.Present
	}
	moving := movingNodes(s.Nodes)
	if d.Current == Undefined && len(moving) > 0 && !targetsAgree(s.Nodes, d.Next) {
		d.Holding = fmt.Sprintf("the layout is undefined and a rollout towards another layout is in progress (%s): waiting until it ends",
			strings.Join(moving, ", "))
		d.Phase = "WaitingForRollout"
		return d
	}
	down := downNodesToMove(s.Nodes, d.Next)
	switch d.Next {
	case Single:
		if s.Central != CentralRunning {
			d.Central = CentralEnsure
			d.Phase = "StartingCentral"
			return d
		}
		if s.NoInterconnect {
			d.Central, d.Phase = CentralInterconnect, "EnablingInterconnect"
			return d
		}
		d.Move = admit(s, d.Next)
		d.Phase = "MovingNodes"
		if allIn(s.Nodes, Single) {
			d.Phase, d.Done = "Converged", d.Desired == Single
		}
	case Multi:
		d.Move = admit(s, d.Next)
		d.Phase = "MovingNodes"
		if allIn(s.Nodes, Multi) {
			if s.Central != CentralRetired {
				d.Central, d.Phase = CentralRetire, "RetiringCentral"
			} else {
				d.Phase, d.Done = "Converged", true
				d.DeleteConfig = s.Config.Present && !s.Config.Definitive
			}
		}
	}
	var holding []string
	if len(down) > 0 {
		holding = append(holding, fmt.Sprintf("node(s) %s are down and not yet in their %s zone: the rollout holds before its final step", strings.Join(down, ", "), d.Next))
	}
	// A move that does not finish keeps its pool's slot (Moving), so no
	// further node of that pool starts, and its node is not in target, so
	// the final step waits: the rollout holds where it is safe.
	for _, n := range s.Nodes {
		if n.Moving() && n.Held != "" {
			holding = append(holding, fmt.Sprintf("node %s does not finish its move to zone %s: %s", n.Name, n.Target, n.Held))
		}
	}
	if len(holding) > 0 {
		d.Holding = strings.Join(holding, "; ")
		d.Done = false
		if d.Central == CentralRetire {
			d.Central = CentralNone
		}
	}
	return d
}

func anyUnannotated(nodes []Node) bool {
	for _, n := range nodes {
		if n.Zone == "" {
			return true
		}
	}
	return false
}

func allIn(nodes []Node, m Mode) bool {
	for _, n := range nodes {
		if n.Zone != ZoneFor(m, n.Name) {
			return false
		}
	}
	return len(nodes) > 0
}

func movingNodes(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		if n.Moving() {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// targetsAgree says every move in progress goes where layout m wants it.
func targetsAgree(nodes []Node, m Mode) bool {
	for _, n := range nodes {
		if n.Moving() && n.Target != ZoneFor(m, n.Name) {
			return false
		}
	}
	return true
}

func downNodesToMove(nodes []Node, m Mode) []string {
	var out []string
	for _, n := range nodes {
		if !n.Ready && n.Zone != ZoneFor(m, n.Name) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// admit picks the nodes to start moving, in name order, under each pool's
// limit counting the nodes busy already (moving, or held by a drain); a node
// that is down or already moving to that zone is not picked again, and a
// node a drain holds moves in the slot it holds.
func admit(s State, m Mode) map[string]string {
	inFlight := map[string]int{}
	for _, n := range s.Nodes {
		if n.Moving() || s.Busy[n.Name] {
			inFlight[s.Pools.Owner[n.Name]]++
		}
	}
	nodes := append([]Node(nil), s.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	move := map[string]string{}
	for _, n := range nodes {
		want := ZoneFor(m, n.Name)
		if n.Zone == want || n.Target == want || !n.Ready || s.Pools.Held[n.Name] != "" {
			continue
		}
		pool := s.Pools.Owner[n.Name]
		if !s.Busy[n.Name] {
			if limit := s.Pools.Limit[pool]; limit > 0 && inFlight[pool] >= limit {
				continue
			}
			inFlight[pool]++
		}
		move[n.Name] = want
	}
	return move
}
