package rollout

import (
	"fmt"
	"sort"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

// DrainPolicy is NetshiftNetwork.spec.drain resolved to its defaults.
type DrainPolicy struct {
	Disabled  bool
	Timeout   time.Duration
	OnTimeout v1alpha1.OnDrainTimeout
	// Settle is how long a pool waits after its latest queued request before it grants slots,
	// so that the requests of a change that reach many nodes at once are all queued and are
	// granted in name order, in the waves `netshift plan` shows, not in the order agents
	// happened to ask.
	Settle time.Duration
}

// DefaultSettle is the operator's default DrainPolicy.Settle.
const DefaultSettle = 500 * time.Millisecond

// DefaultDrainPolicy is the policy of a cluster with no NetshiftNetwork.
var DefaultDrainPolicy = DrainPolicy{Timeout: 10 * time.Minute, OnTimeout: v1alpha1.DrainTimeoutWait, Settle: DefaultSettle}

// DrainPolicyFrom resolves NetshiftNetwork spec.drain against the defaults.
func DrainPolicyFrom(d v1alpha1.DrainSettings) DrainPolicy {
	policy := DefaultDrainPolicy
	policy.Disabled = d.Disabled
	if d.Timeout != nil {
		policy.Timeout = d.Timeout.Duration
	}
	if d.OnTimeout != "" {
		policy.OnTimeout = d.OnTimeout
	}
	return policy
}

// Overdue reports whether a node's drain, started at s.DrainStartedAt, has
// outlasted the policy's timeout (0: none) at now.
func (p DrainPolicy) Overdue(s v1alpha1.NetshiftNodeStateStatus, now time.Time) bool {
	return s.DrainStartedAt != nil && p.Timeout > 0 && now.Sub(s.DrainStartedAt.Time) > p.Timeout
}

// NodeDrain is one node as the drain controller sees it in a pass.
type NodeDrain struct {
	Name   string
	Status v1alpha1.NetshiftNodeStateStatus
	// PodsLeft counts the node's pods that a drain must still see gone (evictable ones, including
	// those already terminating). Only read for nodes in Draining.
	PodsLeft int
	// Busy: the node holds a slot of its pool for something else than its drain (a zone move):
	// it counts against the pool's limit, and its own drain takes no second slot.
	Busy bool
}

// Action is one thing the drain controller does to one node.
type Action string

const (
	// ActionQueue: the agent asked for a drain for a new operation; the node waits for a slot.
	ActionQueue Action = "Queue"
	// ActionCancel: the node waited for a slot but its agent no longer asks for that operation.
	ActionCancel Action = "Cancel"
	// ActionAdmit: the node gets a slot: cordon and evict (or, drain disabled, configure at once).
	ActionAdmit Action = "Admit"
	// ActionEvict: the node is draining and pods are left: evict them.
	ActionEvict Action = "Evict"
	// ActionComplete: the node is draining and no pod is left: it is drained.
	ActionComplete Action = "Complete"
	// ActionRelease: the agent's work for the slot's operation is over: uncordon (if netshift
	// cordoned the node) and free the slot.
	ActionRelease Action = "Release"
	// ActionTimeoutWait: the drain outlasted its timeout; keep draining and report it.
	ActionTimeoutWait Action = "TimeoutWait"
	// ActionTimeoutFail: the drain outlasted its timeout; give it up: uncordon, free the slot, and
	// record the failure for the agent.
	ActionTimeoutFail Action = "TimeoutFail"
)

// Decision is an Action for a node, with the drain status it leads to.
type Decision struct {
	Node   string
	Action Action
	// Operation is the operation the decision belongs to.
	Operation string
	// To is the drain status the node has once the action is carried out.
	To v1alpha1.DrainStatus
	// Reason explains timeouts, for the node's status and the Event.
	Reason string
}

// Frees reports whether carrying the decision out frees the node's slot (or
// its place in the queue).
func (d Decision) Frees() bool {
	return d.Action == ActionRelease || d.Action == ActionTimeoutFail || d.Action == ActionCancel
}

// DecideDrains is one pass of the drain controller: for every node, what to
// do now. Releases and timeouts free their slots for the admissions of the
// same pass; the caller carries them out as Order arranges them, so that no
// slot is reused before it is free.
func DecideDrains(m Membership, nodes []NodeDrain, policy DrainPolicy, now time.Time) []Decision {
	sorted := make([]NodeDrain, len(nodes))
	copy(sorted, nodes)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	var freeing, progress []Decision
	status := make(map[string]v1alpha1.DrainStatus, len(sorted))
	for _, n := range sorted {
		d, ok := decideNode(n, policy, now)
		status[n.Name] = n.Status.DrainStatus
		if !ok {
			continue
		}
		if d.Frees() {
			freeing = append(freeing, d)
			status[n.Name] = d.To
		} else {
			progress = append(progress, d)
		}
	}
	admitTo := v1alpha1.Draining
	if policy.Disabled {
		admitTo = v1alpha1.DrainDisabled
	}
	ops := make(map[string]string, len(sorted))
	for _, n := range sorted {
		ops[n.Name] = n.Status.DrainOperation
	}
	// A pool whose latest request is younger than Settle grants nothing yet.
	latest := map[string]time.Time{}
	for _, n := range sorted {
		if q := n.Status.DrainQueuedAt; status[n.Name] == v1alpha1.DrainRequired && q != nil && q.After(latest[m.Owner[n.Name]]) {
			latest[m.Owner[n.Name]] = q.Time
		}
	}
	for _, n := range sorted {
		if status[n.Name] == v1alpha1.DrainRequired && now.Sub(latest[m.Owner[n.Name]]) < policy.Settle {
			status[n.Name] = v1alpha1.DrainIdle
		}
	}
	// A node queued in this pass still reads Idle in status: it is admitted in a later pass,
	// once its queueing is written.
	busy := make(map[string]bool, len(sorted))
	for _, n := range sorted {
		busy[n.Name] = n.Busy
	}
	var admits []Decision
	for _, name := range m.Admit(status, busy) {
		admits = append(admits, Decision{Node: name, Action: ActionAdmit, Operation: ops[name], To: admitTo})
	}
	return append(append(freeing, progress...), admits...)
}

// decideNode is the per-node state machine; admission is decided per pool by Admit.
func decideNode(n NodeDrain, policy DrainPolicy, now time.Time) (Decision, bool) {
	s := n.Status
	req := s.DrainRequest
	d := Decision{Node: n.Name, Operation: s.DrainOperation}
	sameOp := req != nil && req.Operation == s.DrainOperation
	switch {
	case s.DrainStatus == v1alpha1.DrainRequired:
		if !sameOp || req.State != v1alpha1.DrainRequestRequired {
			d.Action, d.To = ActionCancel, v1alpha1.DrainIdle
			return d, true
		}
		return d, false // waits for admission
	case HoldsSlot(s.DrainStatus):
		if req != nil && (!sameOp || req.State == v1alpha1.DrainRequestIdle) {
			// The agent's work for the slot's operation is over, or the agent has moved on to
			// another operation (the operator replaced the plan): the slot goes. With no request
			// at all (a drain adopted from the legacy annotation) the slot waits for the agent.
			d.Action, d.To = ActionRelease, v1alpha1.DrainIdle
			return d, true
		}
		if s.DrainStatus != v1alpha1.Draining {
			return d, false
		}
		if policy.Overdue(s, now) {
			d.Reason = fmt.Sprintf("drain of node %s has taken %s, over the timeout of %s (%d pods left)",
				n.Name, now.Sub(s.DrainStartedAt.Time).Round(time.Second), policy.Timeout, n.PodsLeft)
			if policy.OnTimeout == v1alpha1.DrainTimeoutFail {
				d.Action, d.To = ActionTimeoutFail, v1alpha1.DrainIdle
				return d, true
			}
			if n.PodsLeft > 0 {
				d.Action, d.To = ActionTimeoutWait, v1alpha1.Draining
				return d, true
			}
		}
		if n.PodsLeft > 0 {
			d.Action, d.To = ActionEvict, v1alpha1.Draining
			return d, true
		}
		d.Action, d.To = ActionComplete, v1alpha1.DrainingComplete
		return d, true
	default: // Idle or empty
		if req == nil || req.State != v1alpha1.DrainRequestRequired {
			return d, false
		}
		if req.Operation == s.DrainOperation {
			return d, false // this operation's drain already ran (or was given up): never twice
		}
		if s.DrainFailure != nil && s.DrainFailure.Operation == req.Operation {
			return d, false
		}
		d.Action, d.To, d.Operation = ActionQueue, v1alpha1.DrainRequired, req.Operation
		return d, true
	}
}
