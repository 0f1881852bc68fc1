package livechange

import (
	"time"

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

// ClockSpread is the window over which the agents of a cluster of nodes
// nodes start their clock checks, each at a moment of its own: 250 checks a
// second, at most a minute. Every agent gets the cluster's plan at once; at
// 5,000 simulated nodes checking together, some agents' round trips stayed
// too slow to tell for 25 s, at 1,000 (and at the pace the per-node plans of
// earlier releases reached the agents) they did not.
func ClockSpread(nodes int) time.Duration {
	return min(time.Duration(nodes)*4*time.Millisecond, time.Minute)
}
