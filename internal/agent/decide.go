// Package agent is netshift's node agent: it runs the operator's plan for its
// own node and reports what happened. It owns nothing but its node and may be
// killed and restarted at any moment: every step is keyed by the operation it
// belongs to, so a restarted agent neither repeats finished work nor takes
// back a decision of the operator.
package agent

import (
	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/rollout"
)

// Step is the agent's next move for its NetshiftNodeState.
type Step string

const (
	// StepNone: nothing to do until something changes.
	StepNone Step = ""
	// StepRequestDrain: ask the drain controller for a drain for the current operation.
	StepRequestDrain Step = "RequestDrain"
	// StepWork: the node holds its slot for the current operation: do the work.
	StepWork Step = "Work"
	// StepDrainFailed: the drain controller gave up the operation's drain: report the failure.
	StepDrainFailed Step = "DrainFailed"
	// StepRelease: the work for the slot's operation is over (or the slot is one the agent did not
	// ask for, such as a drain adopted from the legacy annotation): hand the slot back.
	StepRelease Step = "Release"
)

// NextStep is the agent's state machine, a function of its NetshiftNodeState
// alone. It returns the step and the operation it belongs to.
func NextStep(nns *v1alpha1.NetshiftNodeState) (Step, string) {
	st := &nns.Status
	req := st.DrainRequest
	op := nns.Spec.Operation
	holding := rollout.HoldsSlot(st.DrainStatus) || st.DrainStatus == v1alpha1.DrainRequired

	if op == nil || (st.SyncOperation == op.ID && (st.SyncStatus == v1alpha1.SyncSucceeded || st.SyncStatus == v1alpha1.SyncFailed)) {
		// No work, or this operation's work is over: make sure no slot stays taken for it.
		if holding && (req == nil || req.Operation != st.DrainOperation || req.State != v1alpha1.DrainRequestIdle) {
			return StepRelease, st.DrainOperation
		}
		if op != nil && req != nil && req.Operation == op.ID && req.State != v1alpha1.DrainRequestIdle {
			return StepRelease, op.ID
		}
		return StepNone, ""
	}
	if st.DrainFailure != nil && st.DrainFailure.Operation == op.ID {
		return StepDrainFailed, op.ID
	}
	if req == nil || req.Operation != op.ID || req.State != v1alpha1.DrainRequestRequired {
		return StepRequestDrain, op.ID
	}
	if st.DrainOperation == op.ID && (st.DrainStatus == v1alpha1.DrainingComplete || st.DrainStatus == v1alpha1.DrainDisabled) {
		return StepWork, op.ID
	}
	return StepNone, ""
}
