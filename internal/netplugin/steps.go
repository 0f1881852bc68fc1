package netplugin

import "netshift.io/netshift/api/v1alpha1"

// The steps drivers share: a driver names its steps, and these are the ones
// of plugins whose pods hang off an Open vSwitch integration bridge.
const (
	// StepPodMTU sets the MTU of every pod's interfaces, inside each pod's namespace.
	StepPodMTU v1alpha1.StepAction = "PodMTU"
	// StepHostVethMTU sets the MTU of the node ends of the pods' veths.
	StepHostVethMTU v1alpha1.StepAction = "HostVethMTU"
	// StepNodePortMTU sets the MTU of the node's own ports into the pod network: the internal
	// ports of its integration bridge (OVN-Kubernetes' ovn-k8s-mp0 is one).
	StepNodePortMTU v1alpha1.StepAction = "NodePortMTU"
	// StepTunnelPort changes the destination port of the node's tunnel ports in one OVSDB transaction.
	StepTunnelPort v1alpha1.StepAction = "TunnelPort"
)
