package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NetshiftNetworkName is the name of the one NetshiftNetwork a cluster has.
const NetshiftNetworkName = "cluster"

// OnDrainTimeout says what the drain controller does when a drain outlasts its timeout.
//
// +kubebuilder:validation:Enum=Wait;Fail
type OnDrainTimeout string

const (
	// DrainTimeoutWait: keep the node draining, and report it (node status, Event, condition).
	DrainTimeoutWait OnDrainTimeout = "Wait"
	// DrainTimeoutFail: give up the node's drain: uncordon it if netshift cordoned it, release its
	// slot and mark the node's operation failed.
	DrainTimeoutFail OnDrainTimeout = "Fail"
)

// DrainSettings say how nodes are drained before netshift configures them.
type DrainSettings struct {
	// Disabled configures nodes without cordoning or evicting anything; the pool limits still apply.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// Timeout bounds how long one node's drain may take before OnTimeout applies: a duration from
	// "1s" to "168h" written as Go does, e.g. "10m" or "1h30m".
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="timeout must be a duration from 1s to 168h, e.g. \"10m\""
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// OnTimeout is what happens when a drain outlasts Timeout: Wait (keep waiting and report) or
	// Fail (uncordon, release the slot, mark the node's operation failed).
	// +optional
	// +kubebuilder:default=Wait
	OnTimeout OnDrainTimeout `json:"onTimeout,omitempty"`
}

// FailureAction is what a live change does with a node whose step failed.
//
// +kubebuilder:validation:Enum=Rollback;Reboot;None
type FailureAction string

const (
	// FailureRollback: roll the node back live to the values it had; a node whose rollback also
	// fails stays cordoned and is reported, for a person.
	FailureRollback FailureAction = "Rollback"
	// FailureReboot: roll the node back live; a node that cannot be brought to the cluster's
	// values live is rebooted into them through the drain controller, under its NetshiftNodePool's limit.
	FailureReboot FailureAction = "Reboot"
	// FailureNone: touch nothing more; the node stays cordoned and is reported, for a person.
	FailureNone FailureAction = "None"
)

// FailurePolicy says what a live change does when nodes fail their steps.
type FailurePolicy struct {
	// Action is what happens to a node whose step failed: Rollback (roll it back live to the
	// values it had, the default), Reboot (as Rollback, and a node that cannot be brought to the
	// cluster's values live is rebooted into them through the drain controller, never more at
	// once than its NetshiftNodePool's maxParallel), or None (leave it cordoned for a person).
	// +optional
	// +kubebuilder:default=Rollback
	Action FailureAction `json:"action,omitempty"`
	// MaxFailedNodes is how many nodes may fail their steps while the change still completes on
	// the others: a count from 0 to 10000, or a percentage from "0%" to "100%" of the nodes,
	// rounded down. When more fail (a systematic failure), the change stops everywhere: every
	// node is rolled back live at a new synchronized time. The default, 0, stops the change at
	// the first failed node.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 10000) : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="maxFailedNodes must be a count from 0 to 10000 or a percentage from \"0%\" to \"100%\""
	MaxFailedNodes *intstr.IntOrString `json:"maxFailedNodes,omitempty"`
	// RebootControlPlane allows the Reboot action on control-plane nodes (labelled
	// node-role.kubernetes.io/control-plane or node-role.kubernetes.io/master). Off by default:
	// such a node is left cordoned for a person instead.
	// +optional
	RebootControlPlane bool `json:"rebootControlPlane,omitempty"`
}

// Encapsulation is the overlay's tunnel protocol.
//
// +kubebuilder:validation:Enum=vxlan;geneve
type Encapsulation string

const (
	EncapVXLAN  Encapsulation = "vxlan"
	EncapGeneve Encapsulation = "geneve"
)

// Overhead is the bytes the encapsulation adds to every pod packet on the underlay.
func (e Encapsulation) Overhead() int32 {
	if e == EncapGeneve {
		return 58
	}
	return 50
}

// UnderlaySettings describe the network the tunnels run over.
type UnderlaySettings struct {
	// MTU of the underlay (the nodes' own interfaces), 1280 to 9216. The pod MTU must leave room for
	// the tunnel overhead under it.
	// +optional
	// +kubebuilder:default=1500
	// +kubebuilder:validation:Minimum=1280
	// +kubebuilder:validation:Maximum=9216
	MTU int32 `json:"mtu,omitempty"`
}

// NetshiftNetworkSpec is the cluster's network as the user wants it. A change
// of mtu, vxlanPort or genevePort is carried out live on every node at once.
//
// +kubebuilder:validation:XValidation:rule="!has(self.mtu) || self.mtu <= self.underlay.mtu - (self.encapsulation == 'geneve' ? 58 : 50)",message="spec.mtu must be at most spec.underlay.mtu minus the tunnel overhead (VXLAN 50, Geneve 58)"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.mtu) || !has(self.mtu) || self.mtu == oldSelf.mtu || (self.vxlanPort == oldSelf.vxlanPort && self.genevePort == oldSelf.genevePort)",message="spec.mtu and a tunnel port (spec.vxlanPort, spec.genevePort) cannot change in one edit: change one, let it finish, then the other"
type NetshiftNetworkSpec struct {
	// MTU is the pod MTU: from 576 up to the underlay MTU minus the tunnel overhead (VXLAN 50,
	// Geneve 58). Required: it is the MTU the cluster's pods have now, which netshift takes as
	// applied. Changing it lowers or raises the MTU on every node at a synchronized time.
	// +required
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=9158
	MTU *int32 `json:"mtu"`
	// VXLANPort is the UDP destination port of VXLAN tunnels, 1 to 65535. Changing it on a cluster
	// that uses Geneve is recorded and needs no node step.
	// +optional
	// +kubebuilder:default=4789
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	VXLANPort int32 `json:"vxlanPort,omitempty"`
	// GenevePort is the UDP destination port of Geneve tunnels, 1 to 65535. Changing it on a cluster
	// that uses VXLAN is recorded and needs no node step.
	// +optional
	// +kubebuilder:default=6081
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	GenevePort int32 `json:"genevePort,omitempty"`
	// Encapsulation is the tunnel protocol the cluster uses: vxlan or geneve. It describes the
	// cluster and cannot be changed: netshift has no live change of the protocol.
	// +optional
	// +kubebuilder:default=vxlan
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="encapsulation cannot be changed: netshift carries out no live change of the tunnel protocol"
	Encapsulation Encapsulation `json:"encapsulation,omitempty"`
	// Underlay describes the network the tunnels run over.
	// +optional
	// +kubebuilder:default={}
	Underlay UnderlaySettings `json:"underlay,omitempty"`
	// Drain says how nodes are drained while netshift configures them.
	// +optional
	Drain DrainSettings `json:"drain,omitempty"`
	// OnFailure says what a live change does when nodes fail their steps.
	// +optional
	// +kubebuilder:default={}
	OnFailure FailurePolicy `json:"onFailure,omitempty"`
	// DownNodeGrace is how long a node may be NotReady before a live change goes ahead without
	// it: a duration from "0s" to "24h" written as Go does, e.g. "1m". A node down longer (powered
	// off, being replaced) is not waited for: it is named in status.change.down and, once Ready
	// again, brought to status.applied by a catch-up of its own before it is dropped from that
	// list. A node that blinks for less is waited for as any other.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="downNodeGrace must be a duration from 0s to 24h, e.g. \"1m\""
	DownNodeGrace *metav1.Duration `json:"downNodeGrace,omitempty"`
	// DryRun asks for a live change to be checked and not made: every node checks its
	// preconditions and reports what its steps would change; nothing on a node is touched and no
	// node is cordoned. The result is status.change (dryRun true, phase Checked) and each node's
	// status.liveChange. The spec's own values stay as they are. A dry run runs once per edit of
	// the spec; `netshift change ... --dry-run` sets it and removes it afterwards.
	// +optional
	DryRun *DryRunRequest `json:"dryRun,omitempty"`
}

// DryRunRequest is the change a dry run checks: exactly one value, in the range of the spec
// field of the same name.
//
// +kubebuilder:validation:XValidation:rule="[has(self.mtu), has(self.vxlanPort), has(self.genevePort)].filter(x, x).size() == 1",message="spec.dryRun: give exactly one of mtu, vxlanPort, genevePort"
type DryRunRequest struct {
	// MTU is the pod MTU to check, 576 to 9158 (and under the underlay minus the tunnel overhead).
	// +optional
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=9158
	MTU *int32 `json:"mtu,omitempty"`
	// VXLANPort is the VXLAN port to check, 1 to 65535.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	VXLANPort *int32 `json:"vxlanPort,omitempty"`
	// GenevePort is the Geneve port to check, 1 to 65535.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	GenevePort *int32 `json:"genevePort,omitempty"`
}

// AppliedNetwork is what is in force on the nodes.
type AppliedNetwork struct {
	// MTU is the pod MTU in force.
	// +optional
	MTU int32 `json:"mtu,omitempty"`
	// VXLANPort is the VXLAN port in force.
	// +optional
	VXLANPort int32 `json:"vxlanPort,omitempty"`
	// GenevePort is the Geneve port in force.
	// +optional
	GenevePort int32 `json:"genevePort,omitempty"`
}

// ChangeKind is what a live change changes.
//
// +kubebuilder:validation:Enum=MTU;VXLANPort;GenevePort
type ChangeKind string

const (
	ChangeMTU        ChangeKind = "MTU"
	ChangeVXLANPort  ChangeKind = "VXLANPort"
	ChangeGenevePort ChangeKind = "GenevePort"
)

// ChangePhase is where a live change stands.
//
// +kubebuilder:validation:Enum=Preconditions;Scheduled;RollingBack;Succeeded;RolledBack;Failed;Aborted;Checked
type ChangePhase string

const (
	// PhasePreconditions: every agent checks its node; nothing is touched.
	PhasePreconditions ChangePhase = "Preconditions"
	// PhaseScheduled: T0 and the step schedule are set; agents apply the steps (no node is cordoned).
	PhaseScheduled ChangePhase = "Scheduled"
	// PhaseRollingBack: nodes failed their steps; the failed nodes (or, past spec.onFailure's
	// maxFailedNodes, every node) are rolled back live at status.change.rollback.t0.
	PhaseRollingBack ChangePhase = "RollingBack"
	// PhaseRolledBack: the change stopped everywhere and every node was rolled back live to the
	// values from before it; nothing is left changed.
	PhaseRolledBack ChangePhase = "RolledBack"
	// PhaseSucceeded: every node applied every step; the new values are applied.
	PhaseSucceeded ChangePhase = "Succeeded"
	// PhaseFailed: a precondition or a step failed; see the conditions and the nodes' status.
	PhaseFailed ChangePhase = "Failed"
	// PhaseAborted: cancelled before T0; nothing was touched.
	PhaseAborted ChangePhase = "Aborted"
	// PhaseChecked: a dry run is over; every node reported its preconditions (ready, failed
	// counts them) and what its steps would change; nothing was touched.
	PhaseChecked ChangePhase = "Checked"
)

// Active reports whether a change in this phase is still in progress.
func (p ChangePhase) Active() bool {
	return p == PhasePreconditions || p == PhaseScheduled || p == PhaseRollingBack
}

// NetworkChange is a live change of the MTU or a tunnel port.
type NetworkChange struct {
	// ID names the change; every node's plan and report carry it.
	ID string `json:"id"`
	// Kind is what changes.
	Kind ChangeKind `json:"kind"`
	// From is the value before the change.
	From int32 `json:"from"`
	// To is the value after the change.
	To int32 `json:"to"`
	// Phase is where the change stands.
	Phase ChangePhase `json:"phase"`
	// DryRun is true for a dry run (spec.dryRun): it stops after the preconditions, in phase
	// Checked, with nothing touched.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// StartedAt is when the change was recorded.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// Steps are the steps every node runs, in this order from T0, as the network plugin's driver
	// names them; NetworkConfig, netshift's own, is last.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Steps []StepAction `json:"steps,omitempty"`
	// T0 is the synchronized time every node's steps are timed from.
	// +optional
	T0 *metav1.MicroTime `json:"t0,omitempty"`
	// Nodes is how many nodes take part.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// Ready is how many nodes passed their preconditions.
	// +optional
	Ready int32 `json:"ready,omitempty"`
	// Applied is how many nodes applied every step.
	// +optional
	Applied int32 `json:"applied,omitempty"`
	// Failed is how many nodes failed a precondition, or are not in step after the change's steps
	// (failed, silent, held or rebooting); a node that comes back in step no longer counts.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Message says what the change waits for, or why it failed, naming the nodes.
	// +optional
	Message string `json:"message,omitempty"`
	// Southbound is set when the change is carried out centrally in OVN's southbound database
	// (a Geneve port change in OVN mode, where ovn-controller owns the tunnel ports): Pending until
	// T0, then Done or the error.
	// +optional
	Southbound string `json:"southbound,omitempty"`
	// Converging are the nodes that were silent past T0 (or past the rollback's): their plans
	// stay, an MTU change cordons them, and each is uncordoned once its agent has come back and
	// run its steps late.
	// +optional
	// +listType=atomic
	Converging []string `json:"converging,omitempty"`
	// Held are the nodes left off the cluster's values for a person (a failed step or rollback
	// under spec.onFailure.action Rollback or None, a control-plane node, a failed reboot): each
	// stays cordoned until a Reboot operation started after the change succeeds on it
	// (`netshift reconfigure --reboot --nodes NODE`).
	// +optional
	// +listType=atomic
	Held []string `json:"held,omitempty"`
	// Rollback is the live rollback of the nodes that failed (or of every node), once steps failed.
	// +optional
	Rollback *ChangeRollback `json:"rollback,omitempty"`
	// Rebooting are the nodes the operator reboots through the drain controller because they could
	// not be brought to the cluster's values live (spec.onFailure.action Reboot). Each is cordoned
	// by its drain once its NetshiftNodePool has a slot, and back in service once its agent checked it on
	// its new boot; one whose reboot fails is cordoned again and moves to held, for a person.
	// +optional
	// +listType=atomic
	Rebooting []string `json:"rebooting,omitempty"`
	// Outside are the nodes no agent can run on (not Linux, or outside the agent DaemonSet's
	// placement): no change is for them, and they hold none back.
	// +optional
	// +listType=atomic
	Outside []string `json:"outside,omitempty"`
	// Down are the nodes this change (or an earlier one) went ahead without: NotReady past
	// spec.downNodeGrace, or silent past T0 and then down. They hold no change back. Each is
	// brought to status.applied by a catch-up of its own (a plan named catchup-...) once it is
	// Ready again, within its NetshiftNodePool's limit, and leaves this list when its agent
	// reports the applied values.
	// +optional
	// +listType=atomic
	Down []string `json:"down,omitempty"`
	// Late are the nodes whose step report came after the change's deadline: silent for a while
	// (their agent stopped, or the control plane away), they ran their steps late. A change whose
	// every node has applied it is Succeeded, late nodes included.
	// +optional
	// +listType=atomic
	Late []string `json:"late,omitempty"`
	// Generation is the NetshiftNetwork's metadata.generation that asked for the change: a change
	// that failed in its steps is asked again only by a later edit of the spec.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Attempt counts the tries of this change; a change whose preconditions failed (nothing was
	// touched) is tried again at RetryAt, so it goes through once the cause is fixed, and one whose
	// preconditions a new leader on another replica took over is checked again against its clock.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// RetryAt is when a change whose preconditions failed is tried again.
	// +optional
	RetryAt *metav1.Time `json:"retryAt,omitempty"`
}

// ChangeRollback is a live rollback of a change's nodes to the values from before it.
type ChangeRollback struct {
	// All is true when the change stopped everywhere (more nodes failed than
	// spec.onFailure.maxFailedNodes allows) and every node is rolled back; false when only the
	// failed nodes are, and the change completes on the others.
	// +optional
	All bool `json:"all,omitempty"`
	// Nodes are the nodes rolled back.
	// +listType=atomic
	Nodes []string `json:"nodes"`
	// T0 is the synchronized time the rollback's steps are timed from.
	T0 metav1.MicroTime `json:"t0"`
	// Reason names the nodes whose steps failed, and how.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// NetshiftNetworkStatus is what is in force and what is going on.
type NetshiftNetworkStatus struct {
	// Applied is what is in force on the nodes.
	// +optional
	Applied *AppliedNetwork `json:"applied,omitempty"`
	// Change is the live change in progress, or the last one.
	// +optional
	Change *NetworkChange `json:"change,omitempty"`
	// Conditions are Progressing, Degraded, Upgradeable and Available.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Zones is the OVN interconnect layout: where it is, where it goes, and its rollout.
	// Written by the operator's zone controller.
	// +optional
	Zones *ZonesStatus `json:"zones,omitempty"`
}

// ZoneHold is a node whose zone move does not finish, and why.
type ZoneHold struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Reason says what its network plugin pod is doing instead, in words a person can act on.
	Reason string `json:"reason"`
}

// ZonesStatus is the OVN interconnect layout and its rollout.
type ZonesStatus struct {
	// Current is the layout computed from every node's k8s.ovn.org/zone-name annotation:
	// singlezone (every node in "global"), multizone (every node in its own zone), legacy (no
	// annotation at all: the central layout without zones) or undefined (anything else).
	Current string `json:"current"`
	// Desired is the layout the cluster should end in: the ConfigMap
	// ovn-interconnect-configuration's zone-mode, multizone without it (or when it is
	// netshift's own intermediate step, definitive: no).
	// +optional
	Desired string `json:"desired,omitempty"`
	// Next is the layout the rollout converges to now: singlezone on the way from legacy to
	// multizone.
	// +optional
	Next string `json:"next,omitempty"`
	// Phase is the rollout's stage: Converged, StartingCentral, EnablingInterconnect,
	// MovingNodes, RetiringCentral, WaitingForRollout, WaitingForPlugin, Holding,
	// InvalidConfig or Disabled.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Central is the state of the central side (the network plugin's central
	// Deployment): Starting, Running, Retiring or Retired.
	// +optional
	Central string `json:"central,omitempty"`
	// Nodes is the number of nodes.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// InTarget is how many nodes are already in their zone of Next.
	// +optional
	InTarget int32 `json:"inTarget,omitempty"`
	// Moving are the nodes with a move in progress.
	// +optional
	// +listType=atomic
	Moving []string `json:"moving,omitempty"`
	// Held are the nodes whose move does not finish (their network plugin pod crash-loops, is
	// not ready, or has not annotated the node in time), each with the reason: the rollout holds
	// at a safe point (the node keeps its pool's slot; the central side is neither retired nor
	// the rollout reported done) until the plugin pod finishes the move.
	// +optional
	// +listType=map
	// +listMapKey=node
	Held []ZoneHold `json:"held,omitempty"`
	// Message says why the rollout holds or what is wrong, in words a person can act on.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions are Converged (True once the desired layout's final step is done) and
	// ConfigValid (False while the ConfigMap holds a value netshift cannot use; nothing is
	// changed then).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NetshiftNetwork is the cluster's network as the user wants it and, in status,
// what is applied. There is one, named "cluster".
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nsnet,categories=netshift
// +kubebuilder:validation:XValidation:rule="!has(self.spec.dryRun) || !has(self.spec.dryRun.mtu) || self.spec.dryRun.mtu <= self.spec.underlay.mtu - (self.spec.encapsulation == 'geneve' ? 58 : 50)",message="spec.dryRun.mtu must be at most spec.underlay.mtu minus the tunnel overhead (VXLAN 50, Geneve 58)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="metadata.name must be \"cluster\": a cluster has one NetshiftNetwork"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.change) || !(oldSelf.status.change.phase in ['Preconditions', 'Scheduled', 'RollingBack']) || (self.spec.?mtu == oldSelf.spec.?mtu && self.spec.vxlanPort == oldSelf.spec.vxlanPort && self.spec.genevePort == oldSelf.spec.genevePort && self.spec.encapsulation == oldSelf.spec.encapsulation && self.spec.underlay == oldSelf.spec.underlay)",message="a live change is in progress (status.change): wait for it to finish, or `netshift abort` it before T0, before changing spec.mtu, the tunnel ports, the encapsulation or the underlay"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.change) || ((!has(oldSelf.status.change.converging) || size(oldSelf.status.change.converging) == 0) && (!has(oldSelf.status.change.held) || size(oldSelf.status.change.held) == 0) && (!has(oldSelf.status.change.rebooting) || size(oldSelf.status.change.rebooting) == 0)) || (self.spec.?mtu == oldSelf.spec.?mtu && self.spec.vxlanPort == oldSelf.spec.vxlanPort && self.spec.genevePort == oldSelf.spec.genevePort && self.spec.underlay == oldSelf.spec.underlay)",message="nodes are still converging to the last change (status.change.converging, held, rebooting): bring them back first, before changing spec.mtu, the tunnel ports or the underlay"
// +kubebuilder:printcolumn:name="MTU",type=integer,JSONPath=`.status.applied.mtu`
// +kubebuilder:printcolumn:name="Change",type=string,JSONPath=`.status.change.kind`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.change.phase`
// +kubebuilder:printcolumn:name="Zones",type=string,JSONPath=`.status.zones.current`
type NetshiftNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the network as the user wants it.
	// +required
	Spec NetshiftNetworkSpec `json:"spec"`
	// Status is what is applied and the operation in progress.
	// +optional
	Status NetshiftNetworkStatus `json:"status,omitempty"`
}

// NetshiftNetworkList is a list of NetshiftNetworks.
//
// +kubebuilder:object:root=true
type NetshiftNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetshiftNetwork `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NetshiftNetwork{}, &NetshiftNetworkList{})
}
