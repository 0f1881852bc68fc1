package v1alpha1

// Condition types and reasons netshift writes, in one place: the controllers
// set them and the tests and `kubectl wait --for=condition=...` read them.
// (NetshiftNodePool's are beside its type.)

// NetshiftNetwork status.conditions.
const (
	// NetshiftNetworkProgressing is True while a live change is in progress.
	NetshiftNetworkProgressing = "Progressing"
	// NetshiftNetworkDegraded is True when the last live change failed and is still wanted.
	NetshiftNetworkDegraded = "Degraded"
	// NetshiftNetworkUpgradeable is False while a live change is in progress.
	NetshiftNetworkUpgradeable = "Upgradeable"
	// NetshiftNetworkAvailable is True while the cluster network carries traffic.
	NetshiftNetworkAvailable = "Available"

	ReasonAsExpected       = "AsExpected"
	ReasonChangeInProgress = "ChangeInProgress"
	ReasonChangeFailed     = "ChangeFailed"
	// ReasonChangeRolledBack: the change stopped and every node is back at the old values.
	ReasonChangeRolledBack = "ChangeRolledBack"
	// ReasonChangePrefix followed by the change's phase (ChangePreconditions, ChangeScheduled)
	// is Progressing's reason during a change.
	ReasonChangePrefix = "Change"
)

// NetshiftNetwork status.zones.conditions.
const (
	// ZonesConfigValid is False while the ConfigMap ovn-interconnect-configuration holds a
	// value netshift cannot use (nothing is changed then).
	ZonesConfigValid = "ConfigValid"
	// ZonesConverged is True once the desired layout's final step is done.
	ZonesConverged = "Converged"

	ReasonValid         = "Valid"
	ReasonInvalidConfig = "InvalidConfig"
	ReasonDisabled      = "Disabled"
	// ReasonConverged is also the zone rollout's phase once converged.
	ReasonConverged = "Converged"
)

// The pod condition the agent sets once a plugged pod's port is bound and
// its flows are in place (usable as a readiness gate; a VM migration waits for
// it before resuming), and its reasons.
const (
	PodNetworkReady = "netshift.io/network-ready"

	ReasonPortReady         = "PortReady"
	ReasonWaitingForDevice  = "WaitingForDevice"
	ReasonWaitingForBinding = "WaitingForBinding"
	ReasonPlugRefused       = "PlugRefused"
	ReasonInvalidPort       = "InvalidPort"
)

// The pod condition the operator sets on a pod of a pool-enabled namespace
// while no port can be recorded for it yet (its pool empty, the pools
// recovering, a Neutron error), and once the wait is over. netshift-cni
// quotes it when its wait for the pod's port runs out.
const (
	PodPortAssigned = "netshift.io/port-assigned"

	ReasonPortAssigned = "PortAssigned"
	ReasonPoolNotReady = "PoolNotReady"
	ReasonPortFailed   = "PortFailed"
)
