// Package plug decides how a VM's or pod's port is plugged into a node's Open
// vSwitch: the names of a port's per-port bridge and patch pair, whether a
// plug may go ahead on the node (one mode per node, no name taken twice),
// which plugged ports are stale, and which chassis OVN should bind a port to
// while its VM migrates. Every function here is pure; internal/ovs does the
// OVSDB side and the agent and operator call both.
//
// Per-port mode is the point of the package: the port the network controller
// sees is the integration-side patch port ipb-<id>, created ahead of the VM,
// so its flows are in place before the tap appears on the VM's resume; the
// tap joins the port's own bridge pbr-<id>, whose only flow is NORMAL.
package plug
