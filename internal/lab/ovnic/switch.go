package ovnic

import (
	"context"
	"fmt"
	"strings"

	"netshift.io/netshift/internal/lab/labcni"
)

// nodePortsArgs create a node's switch and its pods' ports, not yet joined to
// the cluster router: a zone can hold them, ready for the node's
// ovn-controller to claim the moment it connects, while the node's subnet is
// still routed to its old zone (no zone advertises a subnet it has no router
// port for). Idempotent.
func nodePortsArgs(ctx context.Context, r Runner, n Node, fromNB string) ([]string, error) {
	ls := "ls-" + n.Name
	args := []string{"--may-exist", "ls-add", ls}
	// The pods' ports are the stand-in network plugin's: copied from where they are.
	if fromNB == "" {
		return args, nil
	}
	ports, err := nodeLogicalPorts(ctx, r, fromNB, n)
	if err != nil {
		return nil, fmt.Errorf("node %s: its pods' logical ports: %w", n.Name, err)
	}
	for _, port := range ports {
		args = append(args, port...)
	}
	return args, nil
}

// nodeLogicalPorts are the pods' logical ports on a node's switch, each as
// the ovn-nbctl arguments that make it again elsewhere (addresses, port
// security, the sandbox it is for), as a northbound database holds them
// (ports created by the stand-in network plugin).
func nodeLogicalPorts(ctx context.Context, r Runner, nb string, n Node) ([][]string, error) {
	ports, err := nbctl(ctx, r, nb, "--if-exists", "get", "logical_switch", "ls-"+n.Name, "ports")
	if err != nil {
		return nil, err
	}
	onSwitch := map[string]bool{}
	for _, u := range strings.FieldsFunc(ports, func(ch rune) bool { return strings.ContainsRune("[], \n", ch) }) {
		onSwitch[u] = true
	}
	// The pods' ports are the switch's ports of no type (not its router port).
	rows, err := nbctl(ctx, r, nb, "--data=bare", "--no-headings", "--format=csv", "--columns=_uuid,name,addresses,external_ids",
		"find", "logical_switch_port", `type=""`)
	if err != nil {
		return nil, err
	}
	var found [][]string
	for _, l := range strings.Split(strings.TrimSpace(rows), "\n") {
		f := strings.SplitN(l, ",", 4)
		if len(f) != 4 || !onSwitch[f[0]] {
			continue
		}
		found = append(found, logicalPortArgs(n, f[1], strings.Trim(f[2], `"`), strings.Trim(f[3], `"`)))
	}
	return found, nil
}

// logicalPortArgs make a pod's logical port again on the node's switch, from
// its name, addresses and external IDs as the northbound database has them.
func logicalPortArgs(n Node, name, addr, externalIDs string) []string {
	args := []string{"--", "--may-exist", "lsp-add", "ls-" + n.Name, name, "--", "lsp-set-addresses", name, addr,
		"--", "lsp-set-port-security", name, addr}
	for _, kv := range strings.Fields(externalIDs) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == labcni.SandboxKey {
			args = append(args, "--", "set", "logical_switch_port", name, "external_ids:"+k+"="+v)
		}
	}
	return args
}

// nodeRouterArgs join a node's switch to the cluster router with the same
// router port (MAC and address: the pods' ARP caches stay valid). Idempotent.
func nodeRouterArgs(n Node) []string {
	ls, lrp := "ls-"+n.Name, "rtr-"+n.Name
	return []string{"--may-exist", "lrp-add", ClusterRouter, lrp, RouterMAC(n.Index), fmt.Sprintf("198.18.%d.1/24", n.Index),
		"--", "--may-exist", "lsp-add", ls, "stor-" + ls,
		"--", "lsp-set-type", "stor-" + ls, "router",
		"--", "lsp-set-addresses", "stor-" + ls, "router",
		"--", "lsp-set-options", "stor-" + ls, "router-port=" + lrp}
}

// moveSwitch moves a node's switch from one zone's NB (none when that zone is
// gone) to another's around pointing its ovn-controller there (remote: the
// ovs-vsctl arguments that do it), in the order that keeps its pods' pause
// short and never lets two zones route its subnet: its ports in the new zone
// first, so the node claims them as soon as it connects; the node pointed
// there; its switch and router port out of the old zone; its router port in
// the new one. fromExtra and toExtra go in the same transactions.
func (ic *Interconnect) moveSwitch(ctx context.Context, c Commands, n Node, remote []string, fromNB, toNB string, fromExtra, toExtra []string) error {
	// New pods' ports go to the new zone from now on; those made until now are copied there.
	if err := ic.Lab.SetNodeNB(n.Name, toNB); err != nil {
		return err
	}
	ports, err := nodePortsArgs(ctx, c, n, fromNB)
	if err != nil {
		return err
	}
	if _, err := nbctl(ctx, c, toNB, ports...); err != nil {
		return err
	}
	if _, err := c.Vsctl(ctx, n.Name, remote...); err != nil {
		return err
	}
	if fromNB != "" {
		del := append([]string{"--if-exists", "ls-del", "ls-" + n.Name, "--", "--if-exists", "lrp-del", "rtr-" + n.Name}, fromExtra...)
		if _, err := nbctl(ctx, c, fromNB, del...); err != nil {
			return err
		}
	}
	_, err = nbctl(ctx, c, toNB, append(nodeRouterArgs(n), toExtra...)...)
	return err
}
