package livechange

import (
	"fmt"
	"math"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
)

// PlanFor is the plan a node runs: its own (in its NetshiftNodeState: a
// rollback of its steps, or the plan of a change that ended while the node
// was silent) when it has one, or else the cluster's NetshiftChangePlan,
// unless the node's report rep shows it rolled that change back: its own
// plan was removed, and an agent whose cache still shows the cluster's plan
// a moment longer must not take the change up again. One plan for the
// cluster is one write for every node instead of one per node, and the
// watch brings it to every agent at once; a node's own plan is the
// exception a few nodes get.
func PlanFor(own, cluster *v1alpha1.LiveChangePlan, rep *v1alpha1.LiveChangeReport) *v1alpha1.LiveChangePlan {
	switch {
	case own != nil:
		return own
	case cluster != nil && rep != nil && rep.ID == RollbackID(cluster.ID):
		return nil
	}
	return cluster
}

// OwnPlanOutdated says whether a node's own plan is no longer one of change
// id's (neither the change's nor its rollback's): left from an earlier
// change, it would hide the cluster's plan from the node, and is removed.
func OwnPlanOutdated(own *v1alpha1.LiveChangePlan, id string) bool {
	return own != nil && own.ID != id && own.ID != RollbackID(id)
}

// DefaultAgentWriteSpacing is the time a node the agents' answers to a
// change are spread over (the operator's --agent-write-spacing): about 167
// writes a second from every agent together. The agents' priority level
// (config/flowcontrol) queues what the API server cannot take at once, for at
// most 15 s; at 5,000 simulated nodes on two cores the API server served
// about 130 writes a second on a slow day, and at 200 answers a second (5 ms
// a node) some waited longer than that and were answered 429.
const DefaultAgentWriteSpacing = 6 * time.Millisecond

// MinAgentWriteSpacing and MaxAgentWriteSpacing bound --agent-write-spacing:
// 1,000 writes a second at most, and at most a minute for 600 nodes.
const (
	MinAgentWriteSpacing = time.Millisecond
	MaxAgentWriteSpacing = 100 * time.Millisecond
)

// ClockSpread is the window over which the agents of a cluster of nodes
// nodes start their clock checks, each at a moment of its own (each check ends
// in the report of the node's preconditions), perNode apart on average. Every
// agent gets the cluster's plan at once; at 5,000 simulated nodes checking
// together, some agents' round trips stayed too slow to tell for 25 s, at
// 1,000 (and at the pace the per-node plans of earlier releases reached the
// agents) they did not.
func ClockSpread(nodes int, perNode time.Duration) time.Duration { return agentsSpread(nodes, perNode) }

// ReportSpread is the window over which the agents of a cluster of nodes
// nodes report the steps they ran at T0, each at a moment of its own, perNode
// apart on average. The agents of a DaemonSet share one ServiceAccount, so
// the API server's priority and fairness queues all their requests as one
// flow: at 5,000 simulated nodes reporting together it answered most of them
// 429 and told them to try again a second later, then two, up to 32 s, all at
// the same moment, and the change took 143 s from T0 to its end.
func ReportSpread(nodes int, perNode time.Duration) time.Duration {
	return agentsSpread(nodes, perNode)
}

// agentsSpread paces the agents' answers to an event that reaches them all at
// once, within a minute: past 10,000 nodes at the default spacing the API
// server's queue, not the window, paces them.
func agentsSpread(nodes int, perNode time.Duration) time.Duration {
	return min(time.Duration(nodes)*perNode, time.Minute)
}

// WindowMs is a window as a plan carries it.
func WindowMs(d time.Duration) int32 { return int32(d.Milliseconds()) }

// Lead is how far ahead of its write T0 is set, for a change of nodes nodes
// whose agents took reached each to have the plan after the operator wrote it
// (their own measure, status.liveChange.planReachedMs). T0 travels the same
// way, one write of the cluster's plan that every agent's watch brings: twice
// the time the slowest 1 % of agents took leaves each room to take the event
// and arm its steps, never less than floor (the --change-lead) and at most
// MaxLead (a few agents' delays are not worth holding a whole cluster's
// change). Until half the nodes measured (agents of an earlier release, agents
// restarted since the plan, or that could not check their clock), the lead is
// at least what it was before anything was measured: floor and
// unmeasuredPerNode a node.
func Lead(floor time.Duration, nodes int, reached []time.Duration) time.Duration {
	unmeasured := floor + time.Duration(nodes)*unmeasuredPerNode
	if len(reached) == 0 {
		return unmeasured
	}
	lead := min(max(floor, 2*percentile(reached, 0.99)), max(floor, MaxLead))
	if 2*len(reached) < nodes {
		return max(lead, unmeasured)
	}
	return lead
}

// unmeasuredPerNode is what the lead grows by for each node when too few
// agents measured how long the plan took to reach them: at 1,000 simulated
// nodes in one process on 2 cores, with 2 s of lead, steps started up to
// 1.1 s late.
const unmeasuredPerNode = time.Millisecond

// MaxLead caps the lead chosen from the agents' measures.
const MaxLead = 30 * time.Second

// percentile is the nearest-rank p-th percentile of ds (0 < p <= 1; ds is not empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// PlanReached is how long the plan written at writtenAt (the operator's
// clock) took to reach an agent that saw it at seen (its node's clock, ahead
// of the operator's by offsetMicros, as the agent measured it), in whole
// milliseconds of the operator's clock; nil when it cannot be told: the plan
// carries no time, the clock was not measured, or the agent started after the
// plan was written (it read the plan when it started, not when the plan was
// written: its delay says nothing of the watch's).
func PlanReached(writtenAt *metav1.MicroTime, seen, started time.Time, offsetMicros *int64) *int32 {
	if writtenAt == nil || offsetMicros == nil {
		return nil
	}
	offset := time.Duration(*offsetMicros) * time.Microsecond
	if started.Add(-offset).After(writtenAt.Time) {
		return nil
	}
	ms := int32(min(max(seen.Add(-offset).Sub(writtenAt.Time), 0).Milliseconds(), math.MaxInt32))
	return &ms
}

// ConfirmWindow is the time before T0 in which each agent confirms, past
// its cache, that the cluster's plan still stands before it runs its first
// step: at a moment of its own in it, so that a cluster's reads are spread,
// a tenth of the agents' write spacing a node (a read costs the API server
// less than a write), at least 400 ms. A watch that lags cannot then run a
// step of a change aborted before the window.
func ConfirmWindow(nodes int, writeSpacing time.Duration) time.Duration {
	return max(minConfirmWindow, time.Duration(nodes)*writeSpacing/10)
}

// minConfirmWindow is the least confirm window, also taken for a plan that
// names none (an older operator's).
const minConfirmWindow = 400 * time.Millisecond

// AbortDeadline is how long before T0 an abort is still accepted, given the
// plan's confirm window: before it, with 500 ms for the abort's own writes.
func AbortDeadline(window time.Duration) time.Duration {
	return max(window, minConfirmWindow) + 500*time.Millisecond
}

// ipv6MinMTU is IPv6's least link MTU (RFC 8200).
const ipv6MinMTU = 1280

// IPv6Problem says why MTU to cannot be set on a node where holder (a pod
// interface or its node end, "" for none) has an IPv6 address: below 1280
// the kernel turns IPv6 off on the link and removes its addresses. A node
// whose pods could not be looked at (err) cannot take it either.
func IPv6Problem(to int32, holder string, err error) string {
	switch {
	case to >= ipv6MinMTU:
		return ""
	case err != nil:
		return fmt.Sprintf("MTU %d is below IPv6's least MTU of %d, and the node's pods could not be checked for IPv6: %v", to, ipv6MinMTU, err)
	case holder != "":
		return fmt.Sprintf("MTU %d is below IPv6's least MTU of %d, and %s has IPv6: the kernel would remove its IPv6 addresses; keep spec.mtu at %d or more while pods or nodes have IPv6",
			to, ipv6MinMTU, holder, ipv6MinMTU)
	}
	return ""
}
