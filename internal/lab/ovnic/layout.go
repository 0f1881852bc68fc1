package ovnic

import "fmt"

// The lab's OVN is routed like common OVN CNIs: one logical switch per node
// (its /24) behind the cluster router lr0, and one switch that spans every
// node for VMs that keep their address when they move. Every zone has a
// router of that name; a node's switch and router port move between them.
const (
	ClusterRouter = "lr0"
	VMSwitch      = "ls-vm"
)

// RouterMAC is the MAC of the cluster router's port on switch i: a node's
// index, or 250 for the VM switch.
func RouterMAC(i int) string { return fmt.Sprintf("0a:58:c6:12:%02x:01", i) }

// RouterSwitchArgs add a switch joined to the cluster router.
func RouterSwitchArgs(ls, lrp, mac, cidr string) []string {
	return []string{"ls-add", ls,
		"--", "lrp-add", ClusterRouter, lrp, mac, cidr,
		"--", "lsp-add", ls, "stor-" + ls,
		"--", "lsp-set-type", "stor-" + ls, "router",
		"--", "lsp-set-addresses", "stor-" + ls, "router",
		"--", "lsp-set-options", "stor-" + ls, "router-port=" + lrp}
}

// VMSwitchArgs add the VM switch, joined to the cluster router.
func VMSwitchArgs() []string {
	return RouterSwitchArgs(VMSwitch, "rtr-vm", RouterMAC(250), "198.18.250.1/24")
}
