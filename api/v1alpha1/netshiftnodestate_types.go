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
// +kubebuilder:validation:Enum=Reconfigure;Reboot
type OperationKind string

const (
	// OperationReconfigure: drain the node under its pool's limit, re-apply netshift's
	// configuration on it, and return it to service.
	OperationReconfigure OperationKind = "Reconfigure"
	// OperationReboot: drain the node under its pool's limit, write the operation's network
	// into the node's configuration, reboot the node, check it carries that network once it is
	// back, and return it to service.
	OperationReboot OperationKind = "Reboot"
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
	// Network is what a Reboot operation brings the node up with: the agent writes it into the
	// node's network configuration before the reboot and checks the node carries it after.
	// +optional
	Network *NodeNetworkConfig `json:"network,omitempty"`
}

// StepAction names one step of a live change on a node. The network plugin's
// driver names its steps (which devices or records each one sets: see the
// driver's page in docs/); NetworkConfig, netshift's own, runs last.
//
// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
// +kubebuilder:validation:MaxLength=63
type StepAction string

// StepNetworkConfig writes the node's network configuration, which new pods are
// set up from, with the values in force after the change (the plan's network).
// It is netshift's own step, the last of every plan, whatever the plugin.
const StepNetworkConfig StepAction = "NetworkConfig"

// ScheduledStep is one step of a live change on a node, run at a fixed offset
// from T0, never "after the previous step".
type ScheduledStep struct {
	// Action is what the step does.
	Action StepAction `json:"action"`
	// OffsetMs is when the step runs, in milliseconds after T0.
	OffsetMs int32 `json:"offsetMs"`
	// Value is the new MTU or port. Which interfaces a step sets the agent finds on its node
	// when the step runs (the pods from the node's container runtime, the node's own devices
	// from its kernel and switch), never from the API, which tenants can write to.
	Value int32 `json:"value"`
}

// NodeNetworkConfig is what a node's new pods are set up with.
type NodeNetworkConfig struct {
	// MTU is the pod MTU.
	MTU int32 `json:"mtu"`
	// Encapsulation is the tunnel protocol between nodes.
	Encapsulation Encapsulation `json:"encapsulation"`
	// TunnelPort is the UDP destination port of the tunnels (of the encapsulation in use).
	TunnelPort int32 `json:"tunnelPort"`
}

// LiveChangePlan is a node's part of a live change: the whole cluster's in the
// NetshiftChangePlan, or one node's own in its NetshiftNodeState.
type LiveChangePlan struct {
	// ID is the change's ID (NetshiftNetwork status.change.id).
	ID string `json:"id"`
	// Kind is what changes.
	Kind ChangeKind `json:"kind"`
	// From is the value before the change.
	From int32 `json:"from"`
	// To is the value after the change.
	To int32 `json:"to"`
	// UnderlayMTU is the cluster's underlay MTU, which the new pod MTU must fit under.
	// +optional
	UnderlayMTU int32 `json:"underlayMTU,omitempty"`
	// Encapsulation is the cluster's tunnel protocol.
	// +optional
	Encapsulation Encapsulation `json:"encapsulation,omitempty"`
	// Network is the cluster network once this change is applied: what the NetworkConfig step
	// writes into the node's network configuration for new pods.
	// +optional
	Network *NodeNetworkConfig `json:"network,omitempty"`
	// Plugin names the network plugin driver the operator planned the change with (its
	// --network-plugin): an agent that runs another refuses the change in its preconditions,
	// before anything is touched, since the steps would be another driver's.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Plugin string `json:"plugin,omitempty"`
	// Rollback is set on a plan that rolls the node back after failed steps: the agent runs its
	// steps at T0 without checking preconditions again (the values are the ones the node had).
	// +optional
	Rollback bool `json:"rollback,omitempty"`
	// TimeURL is the elected operator's /time endpoint, which the agent checks its clock against
	// before it answers (T0 must be one instant on every node). Set by the operator when it
	// advertises one (--time-advertise-url); a leader elected before T0 that advertises another
	// plans the change again, as its next attempt. An agent's own --operator-time-url takes
	// precedence.
	// +optional
	TimeURL string `json:"timeURL,omitempty"`
	// ClockSpreadMs is the window, in milliseconds, over which the agents start their clock
	// check, each at a moment of its own in it: every agent gets the cluster's plan at once, and
	// the operator's time endpoint would take all their round trips together, too slow to tell
	// a clock within the allowed skew. The operator sets it from the number of nodes and its
	// --agent-write-spacing.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60000
	ClockSpreadMs int32 `json:"clockSpreadMs,omitempty"`
	// ReportSpreadMs is the window, in milliseconds, over which the agents report steps that
	// succeeded, each at a moment of its own after its last step: every node runs its steps at
	// T0, and thousands of reports written at once would overrun the API server's priority
	// level for the agents, which answers the excess 429 and tells them all to try again at the
	// same moment, later each time. A failed step is reported at once. The operator sets it
	// from the number of nodes and its --agent-write-spacing.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60000
	ReportSpreadMs int32 `json:"reportSpreadMs,omitempty"`
	// ConfirmWindowMs is the window, in milliseconds, before T0 in which each agent confirms,
	// reading past its cache, that the cluster's plan still stands before its first step: an
	// abort is accepted only before the window, so that no node runs a step of an aborted change
	// however late its watch brings the abort. An agent that gets no answer by its step's time
	// waits for one and runs its steps late if the plan stands. The operator sets it from the
	// number of nodes (a tenth of --agent-write-spacing a node, at least 400); 0 in a node's own
	// plan (a rollback, a catch-up: neither can be aborted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60000
	ConfirmWindowMs int32 `json:"confirmWindowMs,omitempty"`
	// Without are the nodes the cluster's plan is not for: down (NotReady past
	// spec.downNodeGrace) or still to catch up with an earlier change. Their agents, should they
	// run, leave it alone: the operator brings each to the applied values by a plan of its own.
	// +optional
	// +listType=atomic
	Without []string `json:"without,omitempty"`
	// WrittenAt is when the operator wrote the cluster's plan, by its clock. Each agent reports
	// how long the plan took to reach it (status.liveChange.planReachedMs), and the operator sets
	// T0's lead from those: T0 reaches the agents the same way. A node's own plan has none.
	// +optional
	WrittenAt *metav1.MicroTime `json:"writtenAt,omitempty"`
	// T0 is set once every node passed its preconditions: the agent runs its steps from then.
	// Before T0 is set, the agent only checks its preconditions.
	// +optional
	T0 *metav1.MicroTime `json:"t0,omitempty"`
	// Steps are the node's steps, in the order of their offsets.
	// +optional
	// +listType=atomic
	Steps []ScheduledStep `json:"steps,omitempty"`
}

// NetshiftNodeStateSpec is the plan the operator wants run on the node.
type NetshiftNodeStateSpec struct {
	// Operation is the work the node's agent should do now; absent when none is pending.
	// +optional
	Operation *NodeOperation `json:"operation,omitempty"`
	// LiveChange is this node's own part of a live MTU or tunnel port change, which it runs
	// instead of the cluster's NetshiftChangePlan: a rollback of its steps, or the plan of a
	// change that ended while the node was silent. Absent when none: the node follows the
	// NetshiftChangePlan, if there is one.
	// +optional
	LiveChange *LiveChangePlan `json:"liveChange,omitempty"`
	// Uninstall is set by `netshift uninstall`: the agent takes netshift off its node
	// (netshift-cni out of the CNI configuration and its binary, netshift's files under
	// /var/lib/netshift) and reports it in status.uninstall. Ports it plugged stay as they are:
	// they carry their pods' traffic.
	// +optional
	Uninstall bool `json:"uninstall,omitempty"`
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

// StepResult is how one step went.
type StepResult struct {
	// Action is the step's action.
	Action StepAction `json:"action"`
	// At is when the step ran (its actual start).
	At metav1.MicroTime `json:"at"`
	// ScheduledAt is when the step was to start: the change's T0 plus the step's offset.
	// +optional
	ScheduledAt *metav1.MicroTime `json:"scheduledAt,omitempty"`
	// EndedAt is when the step ended (for the tunnel port, when ovs-vswitchd had applied it).
	// +optional
	EndedAt *metav1.MicroTime `json:"endedAt,omitempty"`
	// CommittedAt is, for a step that is one OVSDB transaction, when the database committed it.
	// +optional
	CommittedAt *metav1.MicroTime `json:"committedAt,omitempty"`
	// LateMicros is how late the step started after its scheduled time, in microseconds: its
	// skew, which the agent keeps small by building the step's work before its time.
	// +optional
	LateMicros int64 `json:"lateMicros,omitempty"`
	// LateMs is how late the step started after its offset.
	// +optional
	LateMs int32 `json:"lateMs,omitempty"`
	// TookMs is how long the step took.
	// +optional
	TookMs int32 `json:"tookMs,omitempty"`
	// WaitedMicros is how long the step's thread, from its scheduled time to its end, was ready
	// to run but waited for a processor (the kernel's run delay), in microseconds: the part of
	// its lateness and of its time to commit that the node's busy CPUs cost, not the database.
	// +optional
	WaitedMicros int64 `json:"waitedMicros,omitempty"`
	// Error is why the step failed; empty when it succeeded.
	// +optional
	Error string `json:"error,omitempty"`
	// Changed is how many interfaces the step set.
	// +optional
	Changed int32 `json:"changed,omitempty"`
	// Skipped are the pods (or interfaces) the step left alone, each with why: a pod gone
	// before its step, an interface that is not what the pod's network plugin reported.
	// At most 20 are listed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Skipped []string `json:"skipped,omitempty"`
}

// LiveChangeReport is the agent's report on its node's part of a live change.
type LiveChangeReport struct {
	// ID is the change's ID.
	ID string `json:"id"`
	// Ready is true when every precondition holds on the node.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// Problems are the preconditions that failed, each with its reason; nothing was changed.
	// +optional
	// +listType=atomic
	Problems []string `json:"problems,omitempty"`
	// Warnings are observations that do not stop the change (e.g. the kernel clock is not synced).
	// +optional
	// +listType=atomic
	Warnings []string `json:"warnings,omitempty"`
	// ClockOffsetMicros is the node clock's measured offset from the operator's, in microseconds
	// (positive: the node is ahead).
	// +optional
	ClockOffsetMicros *int64 `json:"clockOffsetMicros,omitempty"`
	// PlanReachedMs is how long after the operator wrote the plan (its writtenAt) the agent took
	// it up, in milliseconds of the operator's clock, by the measured clock offset. Absent when
	// the clock was not measured, the agent's first pass came after the plan was written, or the
	// plan came while the agent still checked the one it replaced. Once half the nodes answered
	// it, the operator sets T0 twice the slowest 1 % of these ahead: at least --change-lead, at
	// most 30 s (or --change-lead, if more).
	// +optional
	// +kubebuilder:validation:Minimum=0
	PlanReachedMs *int32 `json:"planReachedMs,omitempty"`
	// WouldChange is what the node's steps would change, found when the preconditions were
	// checked (how many pods, which of the node's own ports and tunnels): a dry run shows it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	WouldChange []string `json:"wouldChange,omitempty"`
	// Steps are the results of the steps run so far.
	// +optional
	// +listType=atomic
	Steps []StepResult `json:"steps,omitempty"`
	// Done is true when every step ran; Failed tells whether one failed.
	// +optional
	Done bool `json:"done,omitempty"`
	// Failed is true when a step failed.
	// +optional
	Failed bool `json:"failed,omitempty"`
	// Restore is what an older agent recorded of the restore action it ran after a failed step.
	// Deprecated: never written; the operator handles a failed step (NetshiftNetwork
	// spec.onFailure).
	// +optional
	Restore string `json:"restore,omitempty"`
}

// NetshiftNodeStateStatus is what happened on the node. The drain fields are the
// drain controller's; the request and sync fields are the agent's. An agent may
// never change the drain controller's fields (an admission policy refuses it).
type NetshiftNodeStateStatus struct {
	// Pool is the NetshiftNodePool that owns the node ("default" for the implicit pool). Written by the operator.
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
	// Holds are what holds the node now: a drain, a zone move, a live change. One record for
	// every kind: the node counts once against its pool's maxParallel while it carries any hold
	// but a live change's, and netshift uncordons it only when the last hold that needed it
	// cordoned is gone. Written by the operator.
	// +listType=map
	// +listMapKey=kind
	// +optional
	Holds []NodeHold `json:"holds,omitempty"`
	// CordonedByNetshift is true when netshift cordoned the node (for the first of its holds)
	// and so uncordons it when the last hold that needed it cordoned goes; a node someone else
	// cordoned is never uncordoned by netshift. Written by the operator.
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
	// RebootFromBoot is the node's boot ID when its agent rebooted it for the Reboot operation
	// SyncOperation: the agent that comes back on another boot checks the node, where one that
	// restarted on the same boot reboots it again. Written by the agent.
	// +optional
	RebootFromBoot string `json:"rebootFromBoot,omitempty"`
	// LiveChange is the agent's report on the node's part of a live change. Written by the agent.
	// +optional
	LiveChange *LiveChangeReport `json:"liveChange,omitempty"`
	// Uninstall is the agent's report of spec.uninstall: done once nothing of netshift's is left
	// on the node. Written by the agent.
	// +optional
	Uninstall *UninstallReport `json:"uninstall,omitempty"`
	// Network is the network the agent finds on its node: the operator creates the
	// NetshiftNetwork from what every node reports, once they agree. Written by the agent.
	// +optional
	Network *ObservedNetwork `json:"network,omitempty"`
	// LiveChangeCordoned is what an older operator recorded of a live change's cordon. Deprecated:
	// the operator turns it into a LiveChange hold (status.holds) and clears it; never written.
	// +optional
	LiveChangeCordoned string `json:"liveChangeCordoned,omitempty"`
	// ZoneCordoned is what an older operator recorded of a zone move's cordon. Deprecated: the
	// operator turns it into a ZoneMove hold (status.holds) and clears it; never written.
	// +optional
	ZoneCordoned string `json:"zoneCordoned,omitempty"`
	// ZoneRestart records the restart of the node's network plugin pod that the operator made
	// for the node's move: the zone the node was labelled for and the pod it deleted, so that a
	// restarted operator deletes that pod at most once more and waits for its successor.
	// Written by the operator.
	// +optional
	ZoneRestart *ZoneRestart `json:"zoneRestart,omitempty"`
}

// ObservedNetwork is the network an agent finds on its node, from the node itself (its
// network configuration, its pods' interfaces as its runtime reports them, its tunnels, its
// underlay interface), never from an object a tenant can write. A pod with NET_ADMIN can set
// its own eth0's MTU: the pods' MTU is the one most of them have, and nodes that disagree keep
// the NetshiftNetwork from being created rather than deciding it.
type ObservedNetwork struct {
	// MTU is the pod MTU: the node's network configuration's, or else the MTU most of its pods'
	// eth0 have; 0 when the node has neither (no pod with a network of its own yet).
	// +optional
	MTU int32 `json:"mtu,omitempty"`
	// MTUFrom says where MTU was read: NetworkConfig or Pods.
	// +optional
	MTUFrom string `json:"mtuFrom,omitempty"`
	// Encapsulation is the tunnel protocol of the node's tunnels (in its Open vSwitch, else
	// its kernel's VXLAN and Geneve devices); empty when it has none.
	// +optional
	Encapsulation Encapsulation `json:"encapsulation,omitempty"`
	// TunnelPort is their UDP destination port.
	// +optional
	TunnelPort int32 `json:"tunnelPort,omitempty"`
	// UnderlayInterface is the node's interface onto the underlay (the one holding its tunnel
	// address, or the agent's --underlay-interface).
	// +optional
	UnderlayInterface string `json:"underlayInterface,omitempty"`
	// UnderlayMTU is that interface's MTU.
	// +optional
	UnderlayMTU int32 `json:"underlayMTU,omitempty"`
	// Problems are what could not be read, each with why.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Problems []string `json:"problems,omitempty"`
}

// UninstallReport is what an agent took off its node for `netshift uninstall`.
type UninstallReport struct {
	// Done is true once nothing of netshift's is left on the node.
	// +optional
	Done bool `json:"done,omitempty"`
	// Removed lists what the agent removed (files, the CNI configuration entry).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Removed []string `json:"removed,omitempty"`
	// Error is why it is not done yet; the agent tries again.
	// +optional
	Error string `json:"error,omitempty"`
}

// HoldKind is what holds a node.
// +kubebuilder:validation:Enum=Drain;ZoneMove;LiveChange
type HoldKind string

const (
	// HoldDrain: the drain controller gave the node a slot of its pool for an operation.
	HoldDrain HoldKind = "Drain"
	// HoldZoneMove: the node is moving to another OVN interconnect zone.
	HoldZoneMove HoldKind = "ZoneMove"
	// HoldLiveChange: a live change left the node behind (held for a person, or silent after an
	// MTU change's steps) and cordons it. It never waits for, nor takes, a slot of its pool.
	HoldLiveChange HoldKind = "LiveChange"
)

// NodeHold is one holder of a node.
type NodeHold struct {
	// Kind is what holds the node; a node carries at most one hold of each kind.
	Kind HoldKind `json:"kind"`
	// ID names the holder: the drain's operation, the zone the node moves to, the live change's ID.
	// +kubebuilder:validation:MaxLength=253
	ID string `json:"id"`
	// Cordon is true when the holder needs the node cordoned (a drain, a zone move, an MTU
	// change); a drain with drains disabled and a tunnel-port change leave it schedulable.
	// +optional
	Cordon bool `json:"cordon,omitempty"`
	// Since is when the hold was taken.
	Since metav1.Time `json:"since"`
}

// ZoneRestart is the operator's record of a network plugin pod it deleted to move a node.
type ZoneRestart struct {
	// Zone is the zone the node was labelled for (k8s.ovn.org/zone-name).
	Zone string `json:"zone"`
	// Pod is the namespace/name of the plugin pod deleted for this move, "" when the node had none.
	// +optional
	Pod string `json:"pod,omitempty"`
	// PodUID is that pod's UID: a pod of the same name with another UID is its successor.
	// +optional
	PodUID string `json:"podUID,omitempty"`
	// At is when the operator deleted it: a successor that has not annotated the node within
	// the operator's --zone-move-timeout holds the rollout.
	At metav1.Time `json:"at"`
}

// NetshiftNodeState is netshift's record of one node, named after it: the plan
// the operator wants run there (spec) and what happened (status). The operator
// creates one for every Node and deletes it when the Node goes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nsnode,categories=netshift
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.status.pool`
// +kubebuilder:printcolumn:name="Drain",type=string,JSONPath=`.status.drainStatus`
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.syncStatus`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.spec.operation.id`
type NetshiftNodeState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the plan the operator wants run on the node.
	// +optional
	Spec NetshiftNodeStateSpec `json:"spec,omitempty"`
	// Status is what the drain controller decided and what the agent did.
	// +optional
	Status NetshiftNodeStateStatus `json:"status,omitempty"`
}

// NetshiftNodeStateList is a list of NetshiftNodeStates.
//
// +kubebuilder:object:root=true
type NetshiftNodeStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetshiftNodeState `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NetshiftNodeState{}, &NetshiftNodeStateList{})
}
