// Package ovnkubernetes is the driver of OVN-Kubernetes. On a node its pods
// hang off br-int by veths, as with any Open vSwitch bridge plugin, and its
// management port ovn-k8s-mp0 is one of br-int's internal ports; what it adds
// is the routes ovnkube-node locks to the MTU. In the cluster, the MTU and
// the Geneve port ovnkube starts with are in its ConfigMap ovn-config: after
// a change the driver writes them there and restarts ovnkube's pods, so that
// a later restart keeps the new values instead of putting the old ones back.
package ovnkubernetes
