// Package ovsbridge is the driver of a network plugin whose pods hang off an
// Open vSwitch integration bridge by veths, with tunnels between nodes as
// OVS tunnel ports or, with OVN, built by ovn-controller from the southbound
// database's Encap rows. The lab's own plugin is one: it is what CI can
// always run.
package ovsbridge
