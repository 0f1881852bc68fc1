package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DrainStatus is where a node stands in the drain controller's state machine.
// Only the operator's drain controller writes it.
//
// +kubebuilder:validation:Enum=Idle;Drain_Disabled;Drain_Required;Draining_MCP_Pausing;Draining_MCP_Paused;Draining;Draining_Complete
type DrainStatus string

const (
	// DrainIdle: the node holds no configuration slot.
	DrainIdle DrainStatus = "Idle"
	// DrainDisabled: the node holds a slot and is configured without a drain (drain disabled).
	DrainDisabled DrainStatus = "Drain_Disabled"
	// DrainRequired: the agent asked for a drain; the node waits for a slot in its pool.
	DrainRequired DrainStatus = "Drain_Required"
	// DrainingMCPPausing is reserved for an external orchestrator hook; netshift never sets it itself.
	DrainingMCPPausing DrainStatus = "Draining_MCP_Pausing"
	// DrainingMCPPaused is reserved for an external orchestrator hook; netshift never sets it itself.
	DrainingMCPPaused DrainStatus = "Draining_MCP_Paused"
	// Draining: the node holds a slot, is cordoned and its pods are being evicted.
	Draining DrainStatus = "Draining"
	// DrainingComplete: the node holds a slot and is drained; the agent may do its work.
	DrainingComplete DrainStatus = "Draining_Complete"
)

// SyncStatus is how the agent's work on the node's current operation stands.
//
// +kubebuilder:validation:Enum=Idle;InProgress;Succeeded;Failed
type SyncStatus string

const (
	SyncIdle       SyncStatus = "Idle"
	SyncInProgress SyncStatus = "InProgress"
	SyncSucceeded  SyncStatus = "Succeeded"
	SyncFailed     SyncStatus = "Failed"
)

// DrainRequestState is what the agent asks of the drain controller.
//
// +kubebuilder:validation:Enum=Required;Idle
type DrainRequestState string

const (
	// DrainRequestRequired: the agent needs the node drained before it can do its work.
	DrainRequestRequired DrainRequestState = "Required"
	// DrainRequestIdle: the agent's work for the operation is over (done or failed); the slot may go.
	DrainRequestIdle DrainRequestState = "Idle"
)

// OperationKind names the kind of work an operation does on a node.
//
// +kubebuilder:validation:Enum=Reconfigure
type OperationKind string

const (
	// OperationReconfigure: drain the node under its pool's limit, re-apply netshift's
	// configuration on it, and return it to service.
	OperationReconfigure OperationKind = "Reconfigure"
)

// LegacyDrainOperation is the operation ID netshift gives a drain it adopted
// from the node annotation sriovnetwork.openshift.io/state.
const LegacyDrainOperation = "legacy-sriov-annotation"

// NodeOperation is one piece of work the operator asks of a node's agent.
type NodeOperation struct {
	// ID identifies the operation; every report of the agent and every decision of the operator
	// names the operation it belongs to, so a late or repeated write can never be mistaken for
	// one about another operation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ID string `json:"id"`
	// Kind is what the operation does on the node.
	Kind OperationKind `json:"kind"`
	// Reason is a short human explanation of why the operation was started.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
	// RequestedAt is when the operation was started.
	// +optional
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`
}

// NodeNetworkStateSpec is the plan the operator wants run on the node.
type NodeNetworkStateSpec struct {
	// Operation is the work the node's agent should do now; absent when none is pending.
	// +optional
	Operation *NodeOperation `json:"operation,omitempty"`
}

// DrainRequest is the agent's request to the drain controller, tied to one operation.
type DrainRequest struct {
	// Operation is the ID of the operation the request belongs to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Operation string `json:"operation"`
	// State is Required while the agent needs the node drained, Idle once its work is over.
	State DrainRequestState `json:"state"`
	// Time is when the agent last changed the request.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// DrainFailure records that the drain controller gave up on an operation's drain.
type DrainFailure struct {
	// Operation is the ID of the operation whose drain failed.
	Operation string `json:"operation"`
	// Reason says why, in words a person can act on.
	Reason string `json:"reason"`
	// Time is when the drain was given up.
	Time metav1.Time `json:"time"`
}

// NodeNetworkStateStatus is what happened on the node. The drain fields are the
// drain controller's; the request and sync fields are the agent's. An agent may
// never change the drain controller's fields (an admission policy refuses it).
type NodeNetworkStateStatus struct {
	// Pool is the NodePool that owns the node ("default" for the implicit pool). Written by the operator.
	// +optional
	Pool string `json:"pool,omitempty"`
	// DrainStatus is the drain controller's decision for the node. Written by the operator alone.
	// +optional
	DrainStatus DrainStatus `json:"drainStatus,omitempty"`
	// DrainOperation is the operation DrainStatus belongs to. Written by the operator.
	// +optional
	DrainOperation string `json:"drainOperation,omitempty"`
	// DrainQueuedAt is when the drain controller queued the node's request (Drain_Required).
	// Written by the operator.
	// +optional
	DrainQueuedAt *metav1.Time `json:"drainQueuedAt,omitempty"`
	// DrainStartedAt is when the node was given its slot. Written by the operator.
	// +optional
	DrainStartedAt *metav1.Time `json:"drainStartedAt,omitempty"`
	// DrainMessage explains what the drain waits for (a blocked eviction, a timeout). Written by the operator.
	// +optional
	DrainMessage string `json:"drainMessage,omitempty"`
	// CordonedByNetshift is true when netshift cordoned the node and so will uncordon it; a node
	// someone else cordoned is never uncordoned by netshift. Written by the operator.
	// +optional
	CordonedByNetshift bool `json:"cordonedByNetshift,omitempty"`
	// DrainFailure is set when the drain of an operation was given up (drain timeout with
	// onTimeout Fail). Written by the operator.
	// +optional
	DrainFailure *DrainFailure `json:"drainFailure,omitempty"`

	// DrainRequest is the agent's request for a drain and its report that the work is over.
	// Written by the agent.
	// +optional
	DrainRequest *DrainRequest `json:"drainRequest,omitempty"`
	// SyncOperation is the operation SyncStatus belongs to. Written by the agent.
	// +optional
	SyncOperation string `json:"syncOperation,omitempty"`
	// SyncStatus is how the agent's work on SyncOperation stands. Written by the agent.
	// +optional
	SyncStatus SyncStatus `json:"syncStatus,omitempty"`
	// LastSyncError is the agent's last error, empty after a success. Written by the agent.
	// +optional
	LastSyncError string `json:"lastSyncError,omitempty"`
}

// NodeNetworkState is netshift's record of one node, named after it: the plan
// the operator wants run there (spec) and what happened (status). The operator
// creates one for every Node and deletes it when the Node goes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nns
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.status.pool`
// +kubebuilder:printcolumn:name="Drain",type=string,JSONPath=`.status.drainStatus`
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.syncStatus`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.spec.operation.id`
type NodeNetworkState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the plan the operator wants run on the node.
	// +optional
	Spec NodeNetworkStateSpec `json:"spec,omitempty"`
	// Status is what the drain controller decided and what the agent did.
	// +optional
	Status NodeNetworkStateStatus `json:"status,omitempty"`
}

// NodeNetworkStateList is a list of NodeNetworkStates.
//
// +kubebuilder:object:root=true
type NodeNetworkStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeNetworkState `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeNetworkState{}, &NodeNetworkStateList{})
}
