package livechange

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
)

// Policy is spec.onFailure resolved against the nodes taking part.
type Policy struct {
	Action v1alpha1.FailureAction
	// MaxFailed is how many nodes may fail their steps while the change completes on the others.
	MaxFailed          int32
	RebootControlPlane bool
}

// PolicyFromSpec resolves spec.onFailure for a change on nodes nodes. A
// percentage rounds down: 10% of 9 nodes allows none to fail.
func PolicyFromSpec(f v1alpha1.FailurePolicy, nodes int) Policy {
	p := Policy{Action: f.Action, RebootControlPlane: f.RebootControlPlane}
	if p.Action == "" {
		p.Action = v1alpha1.FailureRollback
	}
	if f.MaxFailedNodes != nil {
		// The API server admits only a count or a whole percentage; anything else allows none.
		if n, err := intstr.GetScaledValueFromIntOrPercent(f.MaxFailedNodes, nodes, false); err == nil && n > 0 {
			p.MaxFailed = int32(n)
		}
	}
	return p
}

// RollbackID is the ID of change id's rollback plan.
func RollbackID(id string) string { return id + "-rollback" }

// RebootOperationID is the ID of the Reboot operation change id starts on a node.
func RebootOperationID(id string) string { return id + "-reboot" }

// RollbackPlan is a node's plan that puts back the values from before the
// change: the node steps of its plan of the change in reverse (the order that
// keeps every packet within the narrowest hop, the other way), timed from t0,
// with network written last. A change without node steps (a Geneve port the
// cluster holds in OVN's southbound database) has none to undo either. Its
// reports are spread over reportSpread (ReportSpread of the nodes rolled back).
func RollbackPlan(plan *v1alpha1.LiveChangePlan, t0 metav1.MicroTime, spacing time.Duration, network v1alpha1.NodeNetworkConfig, reportSpread time.Duration) *v1alpha1.LiveChangePlan {
	var back []v1alpha1.StepAction
	for _, s := range plan.Steps {
		if s.Action != v1alpha1.StepNetworkConfig {
			back = append(back, s.Action)
		}
	}
	slices.Reverse(back)
	return &v1alpha1.LiveChangePlan{ID: RollbackID(plan.ID), Kind: plan.Kind, From: plan.To, To: plan.From, Plugin: plan.Plugin,
		UnderlayMTU: plan.UnderlayMTU, Encapsulation: plan.Encapsulation, Rollback: true, T0: &t0, Network: &network,
		Steps: timed(back, plan.From, spacing), ReportSpreadMs: WindowMs(reportSpread)}
}

// RollbackOutcome is where a rollback stands and what follows it.
type RollbackOutcome struct {
	// Phase is RollingBack while nodes have not reported, then RolledBack (every node back, the
	// change stopped) or Failed.
	Phase v1alpha1.ChangePhase
	// Reboot are the nodes to bring to the cluster's values by a reboot through the drain
	// controller; Held the ones left cordoned for a person; Silent the ones that did not report
	// by the deadline (their agents run the rollback late).
	Reboot, Held, Silent []string
	RolledBack           int32
	Message              string
}

// EvaluateRollback decides where the rollback of rb's nodes stands from their
// reports of the rollback plan (nil: none yet). A node is left off the
// cluster's values when its rollback failed, or when it was rolled back alone
// (the others kept the new value): the policy's Reboot brings it to them,
// except a control-plane node the user did not opt in, which is held as any
// node is under the other actions.
func EvaluateRollback(rb *v1alpha1.ChangeRollback, reports map[string]*v1alpha1.LiveChangeReport, now, deadline time.Time,
	policy Policy, controlPlane map[string]bool) RollbackOutcome {
	var o RollbackOutcome
	var waiting, failed, failedNodes, backNodes []string
	for _, n := range sortedNodes(reports) {
		switch r := reports[n]; {
		case r == nil || !r.Done:
			waiting = append(waiting, n)
		case r.Failed:
			failed = append(failed, fmt.Sprintf("node %s: %s", n, firstError(r)))
			failedNodes = append(failedNodes, n)
		default:
			o.RolledBack++
			backNodes = append(backNodes, n)
		}
	}
	if len(waiting) > 0 && (deadline.IsZero() || !now.After(deadline)) {
		o.Phase, o.Message = v1alpha1.PhaseRollingBack, "rolling back live; waiting for "+listed(waiting, ", ")
		return o
	}
	o.Silent = waiting
	off := failedNodes
	if !rb.All {
		off = append(append([]string(nil), backNodes...), failedNodes...)
	}
	for _, n := range off {
		if Off(policy, controlPlane[n]) {
			o.Reboot = append(o.Reboot, n)
		} else {
			o.Held = append(o.Held, n)
		}
	}
	var says []string
	switch {
	case rb.All && len(failedNodes) == 0 && len(o.Silent) == 0:
		o.Phase = v1alpha1.PhaseRolledBack
		says = append(says, fmt.Sprintf("the change stopped: %s; every node was rolled back live", rb.Reason))
	case rb.All && len(failedNodes) == 0:
		o.Phase = v1alpha1.PhaseFailed // RolledBack once the silent nodes have run their rollback
		says = append(says, fmt.Sprintf("the change stopped: %s; every node that answered was rolled back live", rb.Reason))
	case rb.All:
		o.Phase = v1alpha1.PhaseFailed
		says = append(says, fmt.Sprintf("the change stopped: %s; the rollback failed too: %s", rb.Reason, listed(failed, "; ")))
	default:
		o.Phase = v1alpha1.PhaseFailed
		says = append(says, rb.Reason)
		if len(backNodes) > 0 {
			says = append(says, "rolled back live to the old value, off the cluster's new one: "+listed(backNodes, ", "))
		}
		if len(failed) > 0 {
			says = append(says, "the rollback failed too: "+listed(failed, "; "))
		}
	}
	if len(o.Silent) > 0 {
		says = append(says, "no rollback report from "+listed(o.Silent, ", ")+" (their agents roll them back when they come back)")
	}
	if len(o.Reboot) > 0 {
		says = append(says, "rebooting into the cluster's values through the drain controller, under their pools' limits: "+listed(o.Reboot, ", "))
	}
	if len(o.Held) > 0 {
		says = append(says, "held cordoned for a person ("+HeldWhy(policy)+"; `netshift reconfigure --reboot --nodes NODE` reboots one into the cluster's values): "+listed(o.Held, ", "))
	}
	o.Message = strings.Join(says, "; ")
	return o
}

// HeldWhy says why the policy leaves a node for a person.
func HeldWhy(p Policy) string {
	if p.Action == v1alpha1.FailureReboot {
		return "control-plane nodes are rebooted only with spec.onFailure.rebootControlPlane"
	}
	return "spec.onFailure.action " + string(p.Action) + " reboots nothing"
}

// Expected is the ID of the plan node is to run to be in step: the change's,
// or its rollback's for a node rolled back.
func Expected(ch *v1alpha1.NetworkChange, node string) string {
	if rb := ch.Rollback; rb != nil && (rb.All || slices.Contains(rb.Nodes, node)) {
		return RollbackID(ch.ID)
	}
	return ch.ID
}

// CaughtUp says whether a node that was silent (status.change.converging)
// has reported the plan it is to run (Expected) done, and whether a step of
// it failed. Only the report counts: the plan may be gone already (a pass
// that finished the node and could not record it is run again).
func CaughtUp(nns *v1alpha1.NetshiftNodeState, ch *v1alpha1.NetworkChange) (done, failed bool, how string) {
	rep := nns.Status.LiveChange
	if rep == nil || rep.ID != Expected(ch, nns.Name) || !rep.Done {
		return false, false, ""
	}
	if rep.Failed {
		return true, true, "came back and failed a step: " + firstError(rep)
	}
	switch {
	case rep.ID == ch.ID:
		return true, false, "came back and ran its steps late"
	case ch.Phase == v1alpha1.PhaseAborted:
		return true, false, "rolled back the steps it ran after the abort"
	}
	return true, false, "came back and ran its rollback late"
}

// Rebooted says whether a Reboot operation started since the change began
// succeeded on the node: what brings a held or rebooting node back in step.
func Rebooted(nns *v1alpha1.NetshiftNodeState, ch *v1alpha1.NetworkChange) (bool, string) {
	op, st := nns.Spec.Operation, nns.Status
	if op != nil && op.Kind == v1alpha1.OperationReboot && st.SyncOperation == op.ID && st.SyncStatus == v1alpha1.SyncSucceeded &&
		op.RequestedAt != nil && ch.StartedAt != nil && !op.RequestedAt.Before(ch.StartedAt) {
		return true, fmt.Sprintf("was rebooted (operation %s) and checked", op.ID)
	}
	return false, ""
}

// Off decides what becomes of a node left off the cluster's values: reboot
// it (the policy's Reboot, on a node it may reboot) or hold it for a person.
func Off(policy Policy, controlPlane bool) (reboot bool) {
	return policy.Action == v1alpha1.FailureReboot && (!controlPlane || policy.RebootControlPlane)
}

// RebootFailed says whether change ch's Reboot operation failed on the node,
// and why (the agent's error).
func RebootFailed(nns *v1alpha1.NetshiftNodeState, ch *v1alpha1.NetworkChange) (bool, string) {
	op, st := nns.Spec.Operation, nns.Status
	id := RebootOperationID(ch.ID)
	if op == nil || op.ID != id || st.SyncOperation != id || st.SyncStatus != v1alpha1.SyncFailed {
		return false, ""
	}
	return true, st.LastSyncError
}
