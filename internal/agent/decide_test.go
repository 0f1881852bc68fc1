package agent

import (
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

func nns(op string, st v1alpha1.NetshiftNodeStateStatus) *v1alpha1.NetshiftNodeState {
	n := &v1alpha1.NetshiftNodeState{Status: st}
	if op != "" {
		n.Spec.Operation = &v1alpha1.NodeOperation{ID: op, Kind: v1alpha1.OperationReconfigure}
	}
	return n
}

func dr(op string, s v1alpha1.DrainRequestState) *v1alpha1.DrainRequest {
	return &v1alpha1.DrainRequest{Operation: op, State: s}
}

func TestNextStep(t *testing.T) {
	cases := []struct {
		name   string
		in     *v1alpha1.NetshiftNodeState
		want   Step
		wantOp string
	}{
		{"nothing planned", nns("", v1alpha1.NetshiftNodeStateStatus{}), StepNone, ""},
		{"new operation: ask for a drain", nns("op1", v1alpha1.NetshiftNodeStateStatus{}), StepRequestDrain, "op1"},
		{"asked, waiting for a slot", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestRequired)}), StepNone, ""},
		{"draining: wait", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestRequired)}), StepNone, ""},
		{"drained: work", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestRequired)}), StepWork, "op1"},
		{"drain disabled: work", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainDisabled, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestRequired)}), StepWork, "op1"},
		{"slot of another operation: never work on it", nns("op2", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: dr("op2", v1alpha1.DrainRequestRequired)}), StepNone, ""},
		{"done: hand the slot back", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestRequired), SyncOperation: "op1", SyncStatus: v1alpha1.SyncSucceeded}), StepRelease, "op1"},
		{"done and released: nothing, never twice", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestIdle), SyncOperation: "op1", SyncStatus: v1alpha1.SyncSucceeded}), StepNone, ""},
		{"failed earlier: not retried by itself", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestIdle), SyncOperation: "op1", SyncStatus: v1alpha1.SyncFailed}), StepNone, ""},
		{"drain given up by the operator", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainFailure: &v1alpha1.DrainFailure{Operation: "op1"}, DrainRequest: dr("op1", v1alpha1.DrainRequestRequired)}), StepDrainFailed, "op1"},
		{"restarted mid-work: work again (idempotent)", nns("op1", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestRequired), SyncOperation: "op1", SyncStatus: v1alpha1.SyncInProgress}), StepWork, "op1"},
		{"adopted legacy drain, no plan: release it", nns("", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: v1alpha1.LegacyDrainOperation}), StepRelease, v1alpha1.LegacyDrainOperation},
		{"adopted legacy drain released: nothing", nns("", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: v1alpha1.LegacyDrainOperation, DrainRequest: dr(v1alpha1.LegacyDrainOperation, v1alpha1.DrainRequestIdle)}), StepNone, ""},
		{"new operation replaces an older request", nns("op2", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle, DrainOperation: "op1", DrainRequest: dr("op1", v1alpha1.DrainRequestIdle), SyncOperation: "op1", SyncStatus: v1alpha1.SyncSucceeded}), StepRequestDrain, "op2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, op := NextStep(c.in)
			if got != c.want || op != c.wantOp {
				t.Fatalf("NextStep = %q %q, want %q %q", got, op, c.want, c.wantOp)
			}
		})
	}
}
