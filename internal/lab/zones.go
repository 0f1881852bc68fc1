package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The lab's OVN interconnect: the central zone "global" (the central NB/SB
// and ovn-northd) and, for a node moved out of it, a zone of its own with
// its own NB, SB, ovn-northd and ovn-ic; the zones are joined by the transit
// switch ts1 in the interconnect databases, and each zone's router lr0
// reaches the others through its port on ts1 (198.18.254.0/24), learning
// their pod subnets from ovn-ic. The order of a move follows
// ../shared/notes/real-components.md: the new zone is prepared first, the
// node's switch never exists in two zones at once, and the node's chassis
// leaves the old southbound database only once it is connected to the new.

const (
	transitSwitch = "ts1"
	globalZone    = "global"
)

// Zone layouts of `lab up --zones`.
const (
	ZonesLegacy = "legacy"
	ZonesSingle = "single"
	ZonesMulti  = "multi"
)

func (s *State) icDB(which string) string {
	return "unix:" + filepath.Join(s.ovnDir(), "ic"+which+".sock")
}
func (s *State) zoneDir(node string) string { return filepath.Join(s.nodeDir(node), "zone") }

// zoneDBs are the NB and SB sockets of a zone.
func (s *State) zoneDBs(zone string) (nb, sb string) {
	if zone == globalZone {
		return s.NBDB(), s.SBDB()
	}
	d := s.zoneDir(zone)
	return "unix:" + filepath.Join(d, "nb.sock"), "unix:" + filepath.Join(d, "sb.sock")
}

func (s *State) nbctlAt(ctx context.Context, sh *shell, db string, args ...string) (string, error) {
	return sh.run(ctx, nil, "ovn-nbctl", append([]string{"--db=" + db, "--timeout=20"}, args...)...)
}

func (s *State) sbctlAt(ctx context.Context, sh *shell, db string, args ...string) (string, error) {
	return sh.run(ctx, nil, "ovn-sbctl", append([]string{"--db=" + db, "--timeout=20"}, args...)...)
}

// tsIP and tsMAC are a zone's router port on the transit switch.
func (s *State) tsAddr(zone string) (mac, cidr string) {
	if zone == globalZone {
		return "0a:58:c6:12:fe:fe", "198.18.254.254/24"
	}
	n, _ := s.Topology.Node(zone)
	return fmt.Sprintf("0a:58:c6:12:fe:%02x", n.Index), fmt.Sprintf("198.18.254.%d/24", n.Index)
}

// startDB creates an OVSDB database file from a schema and serves it.
func (s *State) startDB(ctx context.Context, sh *shell, role, dir, name, schema string) error {
	file := filepath.Join(dir, name+".db")
	_ = os.Remove(file)
	if _, err := sh.run(ctx, nil, "ovsdb-tool", "create", file, schema); err != nil {
		return err
	}
	pid := filepath.Join(dir, name+".pid")
	return s.startDaemon(ctx, sh, role, "", []string{"OVN_RUNDIR=" + dir}, pid, "ovsdb-server", file,
		"--remote=punix:"+filepath.Join(dir, name+".sock"), "--pidfile="+pid, "--unixctl="+filepath.Join(dir, name+".ctl"),
		"--log-file="+filepath.Join(dir, name+".log"), "--detach")
}

// startIC starts a zone's ovn-ic daemon.
func (s *State) startIC(ctx context.Context, sh *shell, zone, dir string) error {
	nb, sb := s.zoneDBs(zone)
	pid := filepath.Join(dir, "ic.pid")
	return s.startDaemon(ctx, sh, "ovn-ic:"+zone, "", []string{"OVN_RUNDIR=" + dir}, pid, "ovn-ic",
		"--ovnnb-db="+nb, "--ovnsb-db="+sb, "--ic-nb-db="+s.icDB("nb"), "--ic-sb-db="+s.icDB("sb"),
		"--pidfile="+pid, "--unixctl="+filepath.Join(dir, "ic.ctl"), "--log-file="+filepath.Join(dir, "ic.log"), "--detach")
}

// joinTransit names a zone, lets it advertise and learn routes, and gives its
// router a port on the transit switch (once ovn-ic has brought ts1 into the
// zone's NB). gateway is the chassis that carries the zone's transit traffic.
func (s *State) joinTransit(ctx context.Context, sh *shell, zone, gateway string) error {
	nb, _ := s.zoneDBs(zone)
	if _, err := s.nbctlAt(ctx, sh, nb, "set", "NB_Global", ".", "name="+zone, "options:ic-route-adv=true", "options:ic-route-learn=true"); err != nil {
		return err
	}
	if err := poll(ctx, 20*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := s.nbctlAt(ctx, sh, nb, "--bare", "--columns=name", "find", "logical_switch", "name="+transitSwitch)
		return err == nil && strings.TrimSpace(out) == transitSwitch, nil
	}, func() error {
		return fmt.Errorf("zone %s: ovn-ic did not bring the transit switch %s within 10s", zone, transitSwitch)
	}); err != nil {
		return err
	}
	mac, cidr := s.tsAddr(zone)
	lrp, lsp := "rtr-ts-"+zone, "ts-"+zone
	args := []string{"--may-exist", "lrp-add", clusterRouter, lrp, mac, cidr,
		"--", "--may-exist", "lsp-add", transitSwitch, lsp, "--", "lsp-set-type", lsp, "router",
		"--", "lsp-set-addresses", lsp, "router", "--", "lsp-set-options", lsp, "router-port=" + lrp}
	if gateway != "" {
		args = append(args, "--", "lrp-set-gateway-chassis", lrp, gateway, "1")
	}
	_, err := s.nbctlAt(ctx, sh, nb, args...)
	return err
}

// buildIC adds interconnect to the central zone: the IC databases, ts1, the
// global zone's ovn-ic and its router port on ts1, whose transit traffic goes
// through the last node (the one a rollout in name order moves last, so no
// gateway has to move while other nodes still use it). Idempotent.
func (s *State) buildIC(ctx context.Context, sh *shell) error {
	if _, err := os.Stat(filepath.Join(s.ovnDir(), "icnb.sock")); err == nil {
		return nil
	}
	dir := s.ovnDir()
	if err := s.startDB(ctx, sh, "ovsdb-server:ovn-ic-nb", dir, "icnb", "/usr/share/ovn/ovn-ic-nb.ovsschema"); err != nil {
		return err
	}
	if err := s.startDB(ctx, sh, "ovsdb-server:ovn-ic-sb", dir, "icsb", "/usr/share/ovn/ovn-ic-sb.ovsschema"); err != nil {
		return err
	}
	if _, err := sh.run(ctx, nil, "ovn-ic-nbctl", "--db="+s.icDB("nb"), "--timeout=20", "ts-add", transitSwitch); err != nil {
		return err
	}
	// Only a zone's transit gateway is an interconnect chassis: a chassis
	// registered as another zone's gateway could not become its own zone's.
	gw := s.Topology.Nodes[len(s.Topology.Nodes)-1].Name
	if _, err := s.vsctl(ctx, sh, gw, "set", "open", ".", "external_ids:ovn-is-interconn=true"); err != nil {
		return err
	}
	if err := s.startIC(ctx, sh, globalZone, dir); err != nil {
		return err
	}
	return s.joinTransit(ctx, sh, globalZone, gw)
}

// nodeSwitchArgs recreates a node's switch, its router port (same MAC and
// address: the pods' ARP caches stay valid) and its pods' ports.
func (s *State) nodeSwitchArgs(n NodeSpec) []string {
	ls := "ls-" + n.Name
	args := routerSwitchArgs(ls, "rtr-"+n.Name, routerMAC(n.Index), fmt.Sprintf("198.18.%d.1/24", n.Index))
	for _, p := range s.Topology.Pods {
		if p.Node != n.Name || s.removed(p.Name) {
			continue
		}
		addr := p.MAC + " " + p.IP
		args = append(args, "--", "lsp-add", ls, p.Name, "--", "lsp-set-addresses", p.Name, addr, "--", "lsp-set-port-security", p.Name, addr)
	}
	return args
}

func (s *State) removed(pod string) bool {
	for _, r := range s.Removed {
		if r == pod {
			return true
		}
	}
	return false
}

// ZoneOf is the zone a node's ovn-controller is bound in now, read from its
// OVS (the southbound database it talks to).
func (s *State) ZoneOf(ctx context.Context, sh *shell, node string) (string, error) {
	out, err := s.vsctl(ctx, sh, node, "get", "open", ".", "external_ids:ovn-remote")
	if err != nil {
		return "", err
	}
	if _, sb := s.zoneDBs(node); strings.Trim(strings.TrimSpace(out), `"`) == sb {
		return node, nil
	}
	return globalZone, nil
}

// MoveZone moves a node's ovn-controller, switch and pods into zone (global
// or the node's own name) and returns once the node's first pod reaches a
// pod on every other node. Idempotent: a node already there is only checked.
// From the legacy layout, "global" adds interconnect to the central zone.
func (s *State) MoveZone(ctx context.Context, node, zone string, progress func(string, ...any)) error {
	n, ok := s.Topology.Node(node)
	if !ok {
		return fmt.Errorf("no node %s in lab %s", node, s.Options.Name)
	}
	if zone != globalZone && zone != node {
		return fmt.Errorf("node %s: zone %q: a lab node is in %q or its own zone %q", node, zone, globalZone, node)
	}
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return err
	}
	defer sh.close()
	if err := s.centralUp(); err != nil && zone == globalZone {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if _, err := os.Stat(filepath.Join(s.ovnDir(), "nb.sock")); err == nil {
		if err := s.buildIC(ctx, sh); err != nil {
			return fmt.Errorf("interconnect for the global zone: %w", err)
		}
	}
	from, err := s.ZoneOf(ctx, sh, node)
	if err != nil {
		return err
	}
	if from == zone && zone == node {
		// Already pointed there: finish what a move that failed its check may have left.
		if err := s.finishOut(ctx, sh, n); err != nil {
			return fmt.Errorf("node %s: move to zone %s: %w", node, zone, err)
		}
	}
	if from != zone {
		start := time.Now()
		if zone == node {
			err = s.moveOut(ctx, sh, n)
		} else {
			err = s.moveIn(ctx, sh, n)
		}
		if err != nil {
			return fmt.Errorf("node %s: move to zone %s: %w", node, zone, err)
		}
		progress("node %s: moved from zone %s to %s in %d ms", node, from, zone, time.Since(start).Milliseconds())
	}
	return s.checkFrom(ctx, n)
}

// centralUp says whether the central zone runs.
func (s *State) centralUp() error {
	if _, err := os.Stat(filepath.Join(s.ovnDir(), "central-retired")); err == nil {
		return fmt.Errorf("the central zone is retired: start it first (lab zone-central ensure)")
	}
	return nil
}

// moveOut moves a node from the global zone into its own.
func (s *State) moveOut(ctx context.Context, sh *shell, n NodeSpec) error {
	zone, dir := n.Name, s.zoneDir(n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// 1. The new zone, ready before anything moves.
	if err := s.startDB(ctx, sh, "ovsdb-server:zone-nb:"+zone, dir, "nb", "/usr/share/ovn/ovn-nb.ovsschema"); err != nil {
		return err
	}
	if err := s.startDB(ctx, sh, "ovsdb-server:zone-sb:"+zone, dir, "sb", "/usr/share/ovn/ovn-sb.ovsschema"); err != nil {
		return err
	}
	nb, sb := s.zoneDBs(zone)
	pid := filepath.Join(dir, "northd.pid")
	if err := s.startDaemon(ctx, sh, "ovn-northd:"+zone, "", []string{"OVN_RUNDIR=" + dir}, pid, "ovn-northd", "--ovnnb-db="+nb, "--ovnsb-db="+sb,
		"--pidfile="+pid, "--unixctl="+filepath.Join(dir, "northd.ctl"), "--log-file="+filepath.Join(dir, "northd.log"), "--detach"); err != nil {
		return err
	}
	if _, err := s.nbctlAt(ctx, sh, nb, "--may-exist", "lr-add", clusterRouter); err != nil {
		return err
	}
	if err := s.startIC(ctx, sh, zone, dir); err != nil {
		return err
	}
	if err := s.joinTransit(ctx, sh, zone, n.Name); err != nil {
		return err
	}
	// 2. The global zone's transit gateway must not leave with this node.
	if err := s.moveGlobalGateway(ctx, sh, n.Name); err != nil {
		return err
	}
	return s.finishOut(ctx, sh, n)
}

// finishOut points the node at its zone and moves its switch and chassis
// there; every step may run again (a move retried after a failed check).
func (s *State) finishOut(ctx context.Context, sh *shell, n NodeSpec) error {
	nb, sb := s.zoneDBs(n.Name)
	// The node's ovn-controller to the new zone; its switch out of the old zone,
	// then into the new one (never in both).
	if _, err := s.vsctl(ctx, sh, n.Name, "set", "open", ".", "external_ids:ovn-remote="+sb, "external_ids:ovn-is-interconn=true"); err != nil {
		return err
	}
	if _, err := s.nbctlAt(ctx, sh, s.NBDB(), "--if-exists", "ls-del", "ls-"+n.Name, "--", "--if-exists", "lrp-del", "rtr-"+n.Name); err != nil && s.centralUp() == nil {
		return err
	}
	out, err := s.nbctlAt(ctx, sh, nb, "--bare", "--columns=name", "find", "logical_switch", "name=ls-"+n.Name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) == "" {
		if _, err := s.nbctlAt(ctx, sh, nb, s.nodeSwitchArgs(n)...); err != nil {
			return err
		}
	}
	// Only once the node is connected to the new SB, its chassis leaves the old.
	if err := s.waitChassis(ctx, sh, sb, n.Name); err != nil {
		return err
	}
	if s.centralUp() == nil {
		if _, err := s.sbctlAt(ctx, sh, s.SBDB(), "--if-exists", "chassis-del", n.Name); err != nil {
			return err
		}
	}
	return nil
}

// moveIn moves a node from its own zone back into the global zone, and
// stops its zone.
func (s *State) moveIn(ctx context.Context, sh *shell, n NodeSpec) error {
	nb, sb := s.zoneDBs(n.Name)
	// The global SB holds a remote record of this chassis (it is its zone's
	// transit gateway). A node that connected over it would stay "remote" there
	// until the global ovn-ic deleted the record under it and its
	// ovn-controller wrote it again. So first the node stops being an
	// interconnect chassis: its zone's ovn-ic takes it off the gateways and the
	// global ovn-ic drops the record; then it joins.
	if _, err := s.vsctl(ctx, sh, n.Name, "set", "open", ".", "external_ids:ovn-is-interconn=false"); err != nil {
		return err
	}
	if err := s.waitNoChassis(ctx, sh, s.SBDB(), n.Name); err != nil {
		return err
	}
	if _, err := s.vsctl(ctx, sh, n.Name, "set", "open", ".", "external_ids:ovn-remote="+s.SBDB()); err != nil {
		return err
	}
	// The switch and its router port go first: ovn-ic withdraws the route then.
	if _, err := s.nbctlAt(ctx, sh, nb, "--if-exists", "ls-del", "ls-"+n.Name, "--", "--if-exists", "lrp-del", "rtr-"+n.Name); err != nil {
		return err
	}
	if _, err := s.nbctlAt(ctx, sh, s.NBDB(), s.nodeSwitchArgs(n)...); err != nil {
		return err
	}
	if err := s.waitChassis(ctx, sh, s.SBDB(), n.Name); err != nil {
		return err
	}
	if _, err := s.sbctlAt(ctx, sh, sb, "--if-exists", "chassis-del", n.Name); err != nil {
		return err
	}
	// A global zone without a transit gateway on one of its nodes (the first to
	// join a central zone started again) gets this one, once its own zone has
	// stopped naming it.
	if _, err := s.adoptGlobalGateway(ctx, sh, n.Name); err != nil {
		return err
	}
	// The zone goes: its transit port first (its routes are withdrawn), then its daemons.
	if _, err := s.nbctlAt(ctx, sh, nb, "--if-exists", "lsp-del", "ts-"+n.Name, "--", "--if-exists", "lrp-del", "rtr-ts-"+n.Name); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // ovn-ic withdraws the zone's routes
	s.stopRoles("ovn-ic:"+n.Name, "ovn-northd:"+n.Name, "ovsdb-server:zone-nb:"+n.Name, "ovsdb-server:zone-sb:"+n.Name)
	return nil
}

// stopRoles stops the lab's daemons with these roles and forgets them: a
// zone that is gone is not a daemon that died.
func (s *State) stopRoles(roles ...string) {
	want := map[string]bool{}
	for _, r := range roles {
		want[r] = true
	}
	_ = s.reload()
	for _, p := range s.Processes {
		if want[p.Role] {
			p.Stop(3 * time.Second)
		}
	}
	_ = s.record(func() {
		kept := s.Processes[:0]
		for _, p := range s.Processes {
			if !want[p.Role] || p.Alive() {
				kept = append(kept, p)
			}
		}
		s.Processes = kept
	})
}

func (s *State) waitChassis(ctx context.Context, sh *shell, sb, node string) error {
	return poll(ctx, 10*time.Millisecond, 15*time.Second, func(ctx context.Context) (bool, error) {
		out, err := s.sbctlAt(ctx, sh, sb, "--bare", "--columns=name", "find", "chassis_private", "name="+node)
		return err == nil && strings.TrimSpace(out) == node, nil
	}, func() error { return fmt.Errorf("ovn-controller of %s did not connect to %s within 15s", node, sb) })
}

// waitNoChassis waits until a southbound database has no chassis of that name.
func (s *State) waitNoChassis(ctx context.Context, sh *shell, sb, node string) error {
	return poll(ctx, 10*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := s.sbctlAt(ctx, sh, sb, "--bare", "--columns=name", "find", "chassis", "name="+node)
		return err == nil && strings.TrimSpace(out) == "", nil
	}, func() error { return fmt.Errorf("%s still has a chassis %s after 10s", sb, node) })
}

// globalNodes are the nodes whose ovn-controller is in the global zone.
func (s *State) globalNodes(ctx context.Context, sh *shell) ([]string, error) {
	var out []string
	for _, n := range s.Topology.Nodes {
		z, err := s.ZoneOf(ctx, sh, n.Name)
		if err != nil {
			return nil, err
		}
		if z == globalZone {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

func (s *State) globalGateway(ctx context.Context, sh *shell) (string, error) {
	out, err := s.nbctlAt(ctx, sh, s.NBDB(), "lrp-get-gateway-chassis", "rtr-ts-"+globalZone)
	if err != nil {
		return "", err
	}
	// "rtr-ts-global-node-3     1"
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			return strings.TrimPrefix(f[0], "rtr-ts-"+globalZone+"-"), nil
		}
	}
	return "", nil
}

// moveGlobalGateway takes the global zone's transit gateway off a node that
// is leaving (onto the last node that stays, if any: a short pause of the
// traffic between the global zone and the others, which the lab avoids by
// putting the gateway on the node a name-ordered rollout moves last), and
// waits until the interconnect no longer lists the node as the global zone's
// gateway: a chassis can be the gateway of one zone only, and its own zone's
// ovn-ic could not register it while the global one still does.
func (s *State) moveGlobalGateway(ctx context.Context, sh *shell, leaving string) error {
	gw, err := s.globalGateway(ctx, sh)
	if err != nil || gw != leaving {
		return err
	}
	nodes, err := s.globalNodes(ctx, sh)
	if err != nil {
		return err
	}
	args := []string{"lrp-del-gateway-chassis", "rtr-ts-" + globalZone, leaving}
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i] != leaving {
			if _, err := s.vsctl(ctx, sh, nodes[i], "set", "open", ".", "external_ids:ovn-is-interconn=true"); err != nil {
				return err
			}
			args = append(args, "--", "lrp-set-gateway-chassis", "rtr-ts-"+globalZone, nodes[i], "1")
			break
		}
	}
	if _, err := s.nbctlAt(ctx, sh, s.NBDB(), args...); err != nil {
		return err
	}
	if _, err := s.vsctl(ctx, sh, leaving, "set", "open", ".", "external_ids:ovn-is-interconn=false"); err != nil {
		return err
	}
	return poll(ctx, 10*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := sh.run(ctx, nil, "ovn-ic-sbctl", "--db="+s.icDB("sb"), "--timeout=20", "--bare", "--columns=name", "find", "gateway", "name="+leaving)
		return err == nil && strings.TrimSpace(out) == "", nil
	}, func() error {
		return fmt.Errorf("the interconnect still lists %s as the global zone's gateway after 10s", leaving)
	})
}

// adoptGlobalGateway makes the joining node the global zone's transit
// gateway when no global node is; it says whether it did.
func (s *State) adoptGlobalGateway(ctx context.Context, sh *shell, joining string) (bool, error) {
	gw, err := s.globalGateway(ctx, sh)
	if err != nil {
		return false, err
	}
	if gw != "" {
		z, err := s.ZoneOf(ctx, sh, gw)
		if err != nil || z == globalZone {
			return false, err
		}
		if _, err := s.nbctlAt(ctx, sh, s.NBDB(), "lrp-del-gateway-chassis", "rtr-ts-"+globalZone, gw); err != nil {
			return false, err
		}
	}
	if _, err := s.vsctl(ctx, sh, joining, "set", "open", ".", "external_ids:ovn-is-interconn=true"); err != nil {
		return false, err
	}
	_, err = s.nbctlAt(ctx, sh, s.NBDB(), "lrp-set-gateway-chassis", "rtr-ts-"+globalZone, joining, "1")
	return err == nil, err
}

// checkFrom checks, over TCP, that the node's first pod reaches a pod on
// every other node: traffic passes between its zone and the others.
func (s *State) checkFrom(ctx context.Context, n NodeSpec) error {
	var from *PodSpec
	for _, p := range s.Topology.Pods {
		if p.Node == n.Name && !s.removed(p.Name) {
			from = &p
			break
		}
	}
	if from == nil {
		return nil
	}
	seen := map[string]bool{n.Name: true}
	deadline := time.Now().Add(15 * time.Second)
	for _, to := range s.Topology.Pods {
		if seen[to.Node] || s.removed(to.Name) {
			continue
		}
		seen[to.Node] = true
		for {
			err := TCPCheck(*from, to, 500*time.Millisecond)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: pod %s does not reach pod %s on %s: %w", n.Name, from.Name, to.Name, to.Node, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// CentralEnsure starts the central zone again (fresh NB and SB, ovn-northd,
// the cluster router and the VM switch, ovn-ic and the transit port); the
// nodes join it one by one. Idempotent.
func (s *State) CentralEnsure(ctx context.Context) error {
	marker := filepath.Join(s.ovnDir(), "central-retired")
	if _, err := os.Stat(marker); err != nil {
		return nil // running
	}
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return err
	}
	defer sh.close()
	dir := s.ovnDir()
	s.stopRoles("ovsdb-server:ovn-nb", "ovsdb-server:ovn-sb", "ovn-northd", "ovn-ic:"+globalZone) // leftovers of a half-done attempt
	if err := s.startDB(ctx, sh, "ovsdb-server:ovn-nb", dir, "nb", "/usr/share/ovn/ovn-nb.ovsschema"); err != nil {
		return err
	}
	if err := s.startDB(ctx, sh, "ovsdb-server:ovn-sb", dir, "sb", "/usr/share/ovn/ovn-sb.ovsschema"); err != nil {
		return err
	}
	pid := filepath.Join(dir, "northd.pid")
	if err := s.startDaemon(ctx, sh, "ovn-northd", "", []string{"OVN_RUNDIR=" + dir, "OVS_RUNDIR=" + dir}, pid, "ovn-northd", "--ovnnb-db="+s.NBDB(), "--ovnsb-db="+s.SBDB(),
		"--pidfile="+pid, "--unixctl="+filepath.Join(dir, "northd.ctl"), "--log-file="+filepath.Join(dir, "northd.log"), "--detach"); err != nil {
		return err
	}
	if _, err := s.nbctlAt(ctx, sh, s.NBDB(), append([]string{"lr-add", clusterRouter, "--"}, routerSwitchArgs(vmSwitch, "rtr-vm", routerMAC(250), "198.18.250.1/24")...)...); err != nil {
		return err
	}
	if err := s.startIC(ctx, sh, globalZone, dir); err != nil {
		return err
	}
	if err := s.joinTransit(ctx, sh, globalZone, ""); err != nil {
		return err
	}
	return os.Remove(marker)
}

// CentralRetire stops the central zone once no node is in it: its transit
// port first (its routes are withdrawn), then ovn-ic, ovn-northd and the
// central NB and SB.
func (s *State) CentralRetire(ctx context.Context) error {
	marker := filepath.Join(s.ovnDir(), "central-retired")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return err
	}
	defer sh.close()
	nodes, err := s.globalNodes(ctx, sh)
	if err != nil {
		return err
	}
	if len(nodes) > 0 {
		return fmt.Errorf("the central zone still has node(s) %s: move them out first", strings.Join(nodes, ", "))
	}
	if _, err := s.nbctlAt(ctx, sh, s.NBDB(), "--if-exists", "lsp-del", "ts-"+globalZone, "--", "--if-exists", "lrp-del", "rtr-ts-"+globalZone); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	s.stopRoles("ovn-ic:"+globalZone, "ovn-northd", "ovsdb-server:ovn-nb", "ovsdb-server:ovn-sb")
	return os.WriteFile(marker, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// UpgradeZones turns on the operator's zone controller in a lab built
// without it (--zones legacy), as installing a zone-aware netshift would:
// the operator restarts with --zone-migration and, with no ConfigMap, moves
// the cluster to multizone through single zone.
func UpgradeZones(name string) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	if !s.Options.OVN {
		return fmt.Errorf("lab %s: zones need an OVN lab", name)
	}
	if err := s.record(func() { s.ZoneMigration = true }); err != nil {
		return err
	}
	for _, p := range s.Processes {
		if p.Role == "operator" {
			p.Stop(10 * time.Second) // the supervisor starts it again, with the zone controller
		}
	}
	return nil
}

// poll checks done every interval until it holds, returns an error, or
// within has passed (then timeout says what did not happen).
func poll(ctx context.Context, interval, within time.Duration, done func(context.Context) (bool, error), timeout func() error) error {
	err := wait.PollUntilContextTimeout(ctx, interval, within, true, done)
	if wait.Interrupted(err) {
		return timeout()
	}
	return err
}
