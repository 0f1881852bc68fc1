// Package labnet is the driver of the lab's own network plugin: pods on an
// Open vSwitch integration bridge by veths, tunnels between nodes as OVS
// tunnel ports (or, in the lab's OVN mode, built by ovn-controller from the
// southbound database), new pods set up by the lab's CNI plugin from the
// node's network configuration. It is what CI can always run.
package labnet
