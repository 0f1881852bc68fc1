// Package ovnic is the lab's OVN interconnect: the central zone "global" (the
// central NB/SB and ovn-northd) and, for a node moved out of it, a zone of its
// own with its own NB, SB, ovn-northd and ovn-ic; the zones are joined by the
// transit switch ts1 in the interconnect databases, and each zone's router
// lr0 reaches the others through its port on ts1 (198.18.254.0/24), learning
// their pod subnets from ovn-ic. The order of a move: the new zone is
// prepared first, the node's switch never exists in two zones at once, and
// the node's chassis leaves the old southbound database only once it is
// connected to the new.
//
// The package cannot import the lab (the lab imports it): what it needs of
// the lab, it is given as values (Interconnect's fields) and asks through Lab
// and Commands: the lab's command log, its record of the daemons it starts,
// its nodes' Open vSwitch databases, its stand-in network plugin and its pods.
// The lab's own OVN build shares the routed layout defined here (ClusterRouter,
// RouterSwitchArgs).
package ovnic
