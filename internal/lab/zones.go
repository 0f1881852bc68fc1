package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"netshift.io/netshift/internal/controlplane"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The lab's OVN interconnect: the central zone "global" (the central NB/SB
// and ovn-northd) and, for a node moved out of it, a zone of its own with
// its own NB, SB, ovn-northd and ovn-ic; the zones are joined by the transit
// switch ts1 in the interconnect databases, and each zone's router lr0
// reaches the others through its port on ts1 (198.18.254.0/24), learning
// their pod subnets from ovn-ic. The order of a move: the new zone is
// prepared first, the node's switch never exists in two zones at once, and
// the node's chassis leaves the old southbound database only once it is
// connected to the new.

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

// zoneHome is where a zone's databases and daemons live: the lab's OVN
// directory for the global zone, the node's zone directory for a node's own.
func (s *State) zoneHome(zone string) string {
	if zone == globalZone {
		return s.ovnDir()
	}
	return s.zoneDir(zone)
}

// zoneDBs are the NB and SB sockets of a zone.
func (s *State) zoneDBs(zone string) (nb, sb string) {
	d := s.zoneHome(zone)
	return "unix:" + filepath.Join(d, "nb.sock"), "unix:" + filepath.Join(d, "sb.sock")
}

func (s *State) nbctlAt(ctx context.Context, sh *shell, db string, args ...string) (string, error) {
	return sh.run(ctx, nil, "ovn-nbctl", append([]string{"--db=" + db, "--timeout=20"}, args...)...)
}

func (s *State) sbctlAt(ctx context.Context, sh *shell, db string, args ...string) (string, error) {
	return sh.run(ctx, nil, "ovn-sbctl", append([]string{"--db=" + db, "--timeout=20"}, args...)...)
}

func (s *State) icsbctl(ctx context.Context, sh *shell, args ...string) (string, error) {
	return sh.run(ctx, nil, "ovn-ic-sbctl", append([]string{"--db=" + s.icDB("sb"), "--timeout=20"}, args...)...)
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
	args := []string{file, "--remote=punix:" + filepath.Join(dir, name+".sock"), "--pidfile=" + pid, "--unixctl=" + filepath.Join(dir, name+".ctl"),
		"--log-file=" + filepath.Join(dir, name+".log"), "--detach"}
	if dir == s.ovnDir() {
		args = append(args, s.centralRemotes(name)...)
	}
	return s.startDaemon(ctx, sh, role, "", []string{"OVN_RUNDIR=" + dir}, pid, "ovsdb-server", args...)
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

// nodePortsArgs create a node's switch and its pods' ports, not yet joined to
// the cluster router: a zone can hold them, ready for the node's
// ovn-controller to claim the moment it connects, while the node's subnet is
// still routed to its old zone (no zone advertises a subnet it has no router
// port for). Idempotent.
func (s *State) nodePortsArgs(ctx context.Context, sh *shell, n NodeSpec, fromNB string) ([]string, error) {
	ls := "ls-" + n.Name
	args := []string{"--may-exist", "ls-add", ls}
	// The pods' ports are the stand-in network plugin's: copied from where they are.
	if fromNB == "" {
		return args, nil
	}
	ports, err := s.nodeLogicalPorts(ctx, sh, fromNB, n)
	if err != nil {
		return nil, fmt.Errorf("node %s: its pods' logical ports: %w", n.Name, err)
	}
	for _, port := range ports {
		args = append(args, port...)
	}
	return args, nil
}

// nodeRouterArgs join a node's switch to the cluster router with the same
// router port (MAC and address: the pods' ARP caches stay valid). Idempotent.
func (s *State) nodeRouterArgs(n NodeSpec) []string {
	ls, lrp := "ls-"+n.Name, "rtr-"+n.Name
	return []string{"--may-exist", "lrp-add", clusterRouter, lrp, routerMAC(n.Index), fmt.Sprintf("198.18.%d.1/24", n.Index),
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
func (s *State) moveSwitch(ctx context.Context, sh *shell, n NodeSpec, remote []string, fromNB, toNB string, fromExtra, toExtra []string) error {
	// New pods' ports go to the new zone from now on; those made until now are copied there.
	if err := s.setNodeNB(n.Name, toNB); err != nil {
		return err
	}
	ports, err := s.nodePortsArgs(ctx, sh, n, fromNB)
	if err != nil {
		return err
	}
	if _, err := s.nbctlAt(ctx, sh, toNB, ports...); err != nil {
		return err
	}
	if _, err := s.vsctl(ctx, sh, n.Name, remote...); err != nil {
		return err
	}
	if fromNB != "" {
		del := append([]string{"--if-exists", "ls-del", "ls-" + n.Name, "--", "--if-exists", "lrp-del", "rtr-" + n.Name}, fromExtra...)
		if _, err := s.nbctlAt(ctx, sh, fromNB, del...); err != nil {
			return err
		}
	}
	_, err = s.nbctlAt(ctx, sh, toNB, append(s.nodeRouterArgs(n), toExtra...)...)
	return err
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
	unlock, err := s.zoneLock(ctx, "zone-move-"+node)
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	defer unlock()
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
	if from == zone {
		// Already pointed there: finish what a move that failed its check may have left.
		finish := s.finishOut
		if zone == globalZone {
			finish = s.finishIn
		}
		if err := finish(ctx, sh, n); err != nil {
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
	if err := s.transitBound(ctx, sh, zone, progress); err != nil {
		return fmt.Errorf("node %s: move to zone %s: %w", node, zone, err)
	}
	return s.checkFrom(ctx, n)
}

// transitBound makes sure the interconnect carries zone's traffic: zone's
// ovn-ic has published its transit port's gateway, and every other zone's
// ovn-ic has bound its copy of that port to the gateway.
//
// An ovn-ic has been seen to stop writing to a database for good after a
// burst of rejected transactions (a node's chassis in the middle of its move
// is briefly both local and remote), while it still wrote to its others: the
// gateway or the binding never came, and a fresh ovn-ic made it at once. So
// an ovn-ic that has not done its part within 3 s is started again.
func (s *State) transitBound(ctx context.Context, sh *shell, zone string, progress func(string, ...any)) error {
	port := "ts-" + zone
	var gateway string
	published := func(ctx context.Context) (bool, error) {
		out, err := s.icsbctl(ctx, sh, "--bare", "--columns=gateway", "find", "port_binding", "logical_port="+port)
		gateway = strings.TrimSpace(out)
		return err == nil && gateway != "", nil
	}
	if err := s.ovnICDoes(ctx, sh, zone, "publish the gateway of "+port, published, progress); err != nil {
		return err
	}
	for _, other := range s.interconnectedZones() {
		if other == zone {
			continue
		}
		_, sb := s.zoneDBs(other)
		bound := func(ctx context.Context) (bool, error) {
			pb, err := s.sbctlAt(ctx, sh, sb, "--bare", "--columns=chassis", "find", "port_binding", "logical_port="+port)
			if err != nil || strings.TrimSpace(pb) == "" {
				return false, nil
			}
			ch, err := s.sbctlAt(ctx, sh, sb, "--bare", "--columns=_uuid", "find", "chassis", "name="+gateway)
			return err == nil && strings.TrimSpace(ch) == strings.TrimSpace(pb), nil
		}
		if err := s.ovnICDoes(ctx, sh, other, "bind "+port+" to "+gateway, bound, progress); err != nil {
			return err
		}
	}
	return nil
}

// ovnICDoes waits up to 3 s for zone's ovn-ic to do what done checks, and
// otherwise starts that ovn-ic again and waits up to 10 s more.
func (s *State) ovnICDoes(ctx context.Context, sh *shell, zone, what string, done func(context.Context) (bool, error), progress func(string, ...any)) error {
	err := poll(ctx, 10*time.Millisecond, 3*time.Second, done, func() error { return errICStuck })
	if !errors.Is(err, errICStuck) {
		return err
	}
	progress("zone %s: its ovn-ic did not %s within 3s; starting it again", zone, what)
	s.stopRoles("ovn-ic:" + zone)
	if err := s.startIC(ctx, sh, zone, s.zoneHome(zone)); err != nil {
		return err
	}
	return poll(ctx, 10*time.Millisecond, 10*time.Second, done, func() error {
		return fmt.Errorf("zone %s: its ovn-ic did not %s within 10s of starting again", zone, what)
	})
}

var errICStuck = errors.New("ovn-ic stuck")

// interconnectedZones are the zones whose ovn-ic runs (one read of the state).
func (s *State) interconnectedZones() []string {
	_ = s.reload()
	live := map[string]bool{}
	for _, p := range s.Processes {
		if zone, ok := strings.CutPrefix(p.Role, "ovn-ic:"); ok && p.Alive() {
			live[zone] = true
		}
	}
	var zones []string
	if live[globalZone] {
		zones = append(zones, globalZone)
	}
	for _, n := range s.Topology.Nodes {
		if live[n.Name] {
			zones = append(zones, n.Name)
		}
	}
	return zones
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
	// 2. The global zone's transit gateway goes to a node that stays, if any.
	if err := s.moveGlobalGateway(ctx, sh, n.Name); err != nil {
		return err
	}
	return s.finishOut(ctx, sh, n)
}

// finishOut points the node at its zone and moves its switch and chassis
// there; every step may run again (a move retried after a failed check).
func (s *State) finishOut(ctx context.Context, sh *shell, n NodeSpec) error {
	nb, sb := s.zoneDBs(n.Name)
	// A node that was the global zone's transit gateway stops being it as its
	// switch leaves.
	var fromNB string
	var fromExtra []string
	if s.centralUp() == nil {
		fromNB = s.NBDB()
		if gw, err := s.globalGateway(ctx, sh); err != nil {
			return err
		} else if gw == n.Name {
			fromExtra = []string{"--", "lrp-del-gateway-chassis", "rtr-ts-" + globalZone, n.Name}
		}
	}
	remote := []string{"set", "open", ".", "external_ids:ovn-remote=" + sb, "external_ids:ovn-is-interconn=true"}
	if err := s.moveSwitch(ctx, sh, n, remote, fromNB, nb, fromExtra, nil); err != nil {
		return err
	}
	// Only once the node is connected to the new SB and the interconnect knows
	// it as the zone's gateway, its chassis in the old SB becomes the remote
	// record the global zone needs of it: kept, not deleted and made again, so
	// the global nodes' tunnels to it stay.
	if err := s.takeOverChassis(ctx, sh, sb, n.Name); err != nil {
		return err
	}
	if err := s.handOverGateway(ctx, sh, n.Name, n.Name); err != nil {
		return err
	}
	if s.centralUp() != nil {
		return nil
	}
	out, err := s.sbctlAt(ctx, sh, s.SBDB(), "--bare", "--columns=name", "find", "chassis", "name="+n.Name)
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	_, err = s.sbctlAt(ctx, sh, s.SBDB(), "remove", "chassis", n.Name, "other_config", "is-interconn",
		"--", "set", "chassis", n.Name, "other_config:is-remote=true",
		"--", "--if-exists", "destroy", "chassis_private", n.Name)
	return err
}

// handOverGateway makes the interconnect list node as zone's transit gateway
// and waits until it does. A gateway row of another zone is moved to this
// zone rather than left to the two ovn-ic daemons, which would delete it and
// register it again, and every other zone would delete its record of the
// node, and its tunnels to it, and make them again.
func (s *State) handOverGateway(ctx context.Context, sh *shell, node, zone string) error {
	var az string
	if err := poll(ctx, 10*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := s.icsbctl(ctx, sh, "--bare", "--columns=_uuid", "find", "availability_zone", "name="+zone)
		az = strings.TrimSpace(out)
		return err == nil && az != "", nil
	}, func() error { return fmt.Errorf("zone %s is not in the interconnect after 10s", zone) }); err != nil {
		return err
	}
	out, err := s.icsbctl(ctx, sh, "--bare", "--columns=_uuid,availability_zone", "find", "gateway", "name="+node)
	if err != nil {
		return err
	}
	if f := strings.Fields(out); len(f) == 2 && f[1] != az {
		if _, err := s.icsbctl(ctx, sh, "set", "gateway", f[0], "availability_zone="+az); err != nil {
			return err
		}
	}
	return poll(ctx, 10*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := s.icsbctl(ctx, sh, "--bare", "--columns=name", "find", "gateway", "name="+node, "availability_zone="+az)
		return err == nil && strings.TrimSpace(out) == node, nil
	}, func() error {
		return fmt.Errorf("the interconnect does not list %s as zone %s's gateway after 10s", node, zone)
	})
}

// moveIn moves a node from its own zone back into the global zone, and
// stops its zone.
func (s *State) moveIn(ctx context.Context, sh *shell, n NodeSpec) error {
	return s.finishIn(ctx, sh, n)
}

// finishIn points the node at the global zone, moves its switch there and
// stops its own zone; every step may run again (a move retried after a
// failed check).
func (s *State) finishIn(ctx context.Context, sh *shell, n NodeSpec) error {
	nb, sb := s.zoneDBs(n.Name)
	zoneUp := s.running("ovsdb-server:zone-nb:" + n.Name)
	// A global zone whose transit gateway is on no global node (the first node
	// to join a central zone started again) gets this node as its gateway in
	// the same steps as the node joins: registering it only once it is bound
	// would add a full ovn-ic round to the node's pause.
	gw, err := s.globalGateway(ctx, sh)
	if err != nil {
		return err
	}
	adopt := gw == "" || gw == n.Name
	if !adopt {
		z, err := s.ZoneOf(ctx, sh, gw)
		if err != nil {
			return err
		}
		adopt = z != globalZone
	}
	remote := []string{"set", "open", ".", "external_ids:ovn-remote=" + s.SBDB(), fmt.Sprintf("external_ids:ovn-is-interconn=%t", adopt)}
	var fromNB string
	if zoneUp {
		fromNB = nb
	}
	var toExtra []string
	if adopt && gw != n.Name {
		if gw != "" {
			toExtra = append(toExtra, "--", "lrp-del-gateway-chassis", "rtr-ts-"+globalZone, gw)
		}
		toExtra = append(toExtra, "--", "lrp-set-gateway-chassis", "rtr-ts-"+globalZone, n.Name, "1")
	}
	if err := s.moveSwitch(ctx, sh, n, remote, fromNB, s.NBDB(), nil, toExtra); err != nil {
		return err
	}
	if err := s.takeOverChassis(ctx, sh, s.SBDB(), n.Name); err != nil {
		return err
	}
	if adopt {
		if err := s.handOverGateway(ctx, sh, n.Name, globalZone); err != nil {
			return err
		}
	}
	if !zoneUp {
		return nil
	}
	if _, err := s.sbctlAt(ctx, sh, sb, "--if-exists", "chassis-del", n.Name); err != nil {
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

// running says whether the lab runs a live daemon with this role.
func (s *State) running(role string) bool {
	_ = s.reload()
	for _, p := range s.Processes {
		if p.Role == role && p.Alive() {
			return true
		}
	}
	return false
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

// takeOverChassis waits until the node's ovn-controller is connected to a
// zone's southbound database (its Chassis_Private row: only ovn-controller
// writes it) and makes the node's chassis there its own.
//
// The zone's ovn-ic knew the node as another zone's transit gateway and kept a
// remote record of it, which ovn-controller takes over (its tunnels stay). Left
// marked remote, that ovn-ic would delete the record under the node the moment
// the old zone drops its gateway, and the node would be unbound until its
// ovn-controller wrote it again: 0.3 to 0.7 s more, measured. Asking the
// interconnect to drop the node first instead (a round through both ovn-ic
// daemons, and every zone's tunnels to the node deleted and made again) cost
// as much. Clearing the mark makes the record the node's before the old zone
// lets go of it.
func (s *State) takeOverChassis(ctx context.Context, sh *shell, sb, node string) error {
	if err := poll(ctx, 10*time.Millisecond, 15*time.Second, func(ctx context.Context) (bool, error) {
		out, err := s.sbctlAt(ctx, sh, sb, "--bare", "--columns=name", "find", "chassis_private", "name="+node)
		return err == nil && strings.TrimSpace(out) == node, nil
	}, func() error { return fmt.Errorf("ovn-controller of %s did not connect to %s within 15s", node, sb) }); err != nil {
		return err
	}
	_, err := s.sbctlAt(ctx, sh, sb, "remove", "chassis", node, "other_config", "is-remote")
	return err
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

// moveGlobalGateway gives the global zone's transit gateway to the last
// other node that stays in the zone, when the leaving node carries it (a
// short pause of the traffic between the global zone and the others, which
// the lab avoids by putting the gateway on the node a name-ordered rollout
// moves last). The last node to leave keeps it until its switch leaves.
func (s *State) moveGlobalGateway(ctx context.Context, sh *shell, leaving string) error {
	gw, err := s.globalGateway(ctx, sh)
	if err != nil || gw != leaving {
		return err
	}
	nodes, err := s.globalNodes(ctx, sh)
	if err != nil {
		return err
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i] == leaving {
			continue
		}
		if _, err := s.vsctl(ctx, sh, nodes[i], "set", "open", ".", "external_ids:ovn-is-interconn=true"); err != nil {
			return err
		}
		_, err := s.nbctlAt(ctx, sh, s.NBDB(), "lrp-del-gateway-chassis", "rtr-ts-"+globalZone, leaving,
			"--", "lrp-set-gateway-chassis", "rtr-ts-"+globalZone, nodes[i], "1")
		return err
	}
	return nil
}

// checkFrom checks, over TCP, that the node's first pod reaches a pod on
// every other node: traffic passes between its zone and the others.
func (s *State) checkFrom(ctx context.Context, n NodeSpec) error {
	if s.Kubeconfig == "" {
		return nil // being built: no pods yet
	}
	pods, err := s.Pods(ctx)
	if err != nil {
		return fmt.Errorf("node %s: the lab's pods: %w", n.Name, err)
	}
	var from *PodSpec
	for _, p := range pods {
		if p.Node == n.Name && p.Netns != "" {
			from = &p
			break
		}
	}
	if from == nil {
		return nil
	}
	seen := map[string]bool{n.Name: true}
	deadline := time.Now().Add(15 * time.Second)
	for _, to := range pods {
		if seen[to.Node] || to.Netns == "" {
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
	unlock, err := s.zoneLock(ctx, "zone-central")
	if err != nil {
		return err
	}
	defer unlock()
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
	unlock, err := s.zoneLock(ctx, "zone-central")
	if err != nil {
		return err
	}
	defer unlock()
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
// without it (--zones legacy), as installing a zone-aware netshift would
// (config/lab-ovn-zones applied over config/lab-ovn): the operator rolls out
// with --zone-migration and, with no ConfigMap, moves the cluster to
// multizone through single zone.
func UpgradeZones(name string) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	overlay := "lab-ovn-zones"
	switch {
	case s.runsOVNKubernetes():
		overlay = "lab-ovn-kubernetes-zones"
	case !s.Options.OVN:
		return fmt.Errorf("lab %s: zones need an OVN lab (--ovn or --ovn-kubernetes)", name)
	}
	// Upgrading the installed netshift to one with the zone controller, as a user would.
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.applyOverlay(ctx, assets, s.Kubeconfig, overlay)
}

// zoneLock serializes the lab's actuations of one thing (a node's move, the
// central zone). A plugin pod killed mid-command leaves its command
// running; the restarted one runs it again, and that second run must wait for
// the first to end rather than interleave with it, then finds the work done.
func (s *State) zoneLock(ctx context.Context, what string) (unlock func(), err error) {
	f, err := os.OpenFile(s.Path(what+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = poll(ctx, 50*time.Millisecond, 5*time.Minute, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	}, func() error { return fmt.Errorf("%s: another run still holds %s after 5 minutes", what, f.Name()) })
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
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
