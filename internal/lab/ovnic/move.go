package ovnic

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"netshift.io/netshift/internal/lab/poll"
	"netshift.io/netshift/internal/ovs/ovsdist"
)

// ZoneOf is the zone a node's ovn-controller is bound in now, read from its
// OVS (the southbound database it talks to).
func (ic *Interconnect) ZoneOf(ctx context.Context, c Commands, node string) (string, error) {
	out, err := c.Vsctl(ctx, node, "get", "open", ".", "external_ids:ovn-remote")
	if err != nil {
		return "", err
	}
	if _, sb := ic.zoneDBs(node); strings.Trim(strings.TrimSpace(out), `"`) == sb {
		return node, nil
	}
	return GlobalZone, nil
}

// MoveZone moves a node's ovn-controller, switch and pods into zone (global
// or the node's own name) and returns once the node's first pod reaches a
// pod on every other node. Idempotent: a node already there is only checked.
// From the legacy layout, "global" adds interconnect to the central zone.
func (ic *Interconnect) MoveZone(ctx context.Context, node, zone string, progress func(string, ...any)) error {
	n, ok := ic.node(node)
	if !ok {
		return fmt.Errorf("no node %s in lab %s", node, ic.Name)
	}
	if zone != GlobalZone && zone != node {
		return fmt.Errorf("node %s: zone %q: a lab node is in %q or its own zone %q", node, zone, GlobalZone, node)
	}
	unlock, err := ic.lock(ctx, "zone-move-"+node)
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	defer unlock()
	c, err := ic.Lab.Commands()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := ic.CentralUp(); err != nil && zone == GlobalZone {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if _, err := os.Stat(filepath.Join(ic.OVNDir, "nb.sock")); err == nil {
		if err := ic.Build(ctx, c); err != nil {
			return fmt.Errorf("interconnect for the global zone: %w", err)
		}
	}
	if err := ic.moveNode(ctx, c, n, zone, progress); err != nil {
		return err
	}
	if err := ic.transitBound(ctx, c, zone, progress); err != nil {
		return fmt.Errorf("node %s: move to zone %s: %w", node, zone, err)
	}
	return ic.Lab.CheckFrom(ctx, node)
}

// moveNode moves the node into zone, or finishes a move there.
func (ic *Interconnect) moveNode(ctx context.Context, c Commands, n Node, zone string, progress func(string, ...any)) error {
	from, err := ic.ZoneOf(ctx, c, n.Name)
	if err != nil {
		return err
	}
	if from == zone {
		// Already pointed there: finish what a move that failed its check may have left.
		finish := ic.finishOut
		if zone == GlobalZone {
			finish = ic.finishIn
		}
		if err := finish(ctx, c, n); err != nil {
			return fmt.Errorf("node %s: move to zone %s: %w", n.Name, zone, err)
		}
		return nil
	}
	start := time.Now()
	if zone == n.Name {
		err = ic.moveOut(ctx, c, n)
	} else {
		err = ic.moveIn(ctx, c, n)
	}
	if err != nil {
		return fmt.Errorf("node %s: move to zone %s: %w", n.Name, zone, err)
	}
	progress("node %s: moved from zone %s to %s in %d ms", n.Name, from, zone, time.Since(start).Milliseconds())
	return nil
}

// moveOut moves a node from the global zone into its own.
func (ic *Interconnect) moveOut(ctx context.Context, c Commands, n Node) error {
	zone, dir := n.Name, ic.zoneDir(n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// 1. The new zone, ready before anything moves.
	if err := ic.startDB(ctx, c, "ovsdb-server:zone-nb:"+zone, dir, "nb", ovsdist.Schema("ovn-nb")); err != nil {
		return err
	}
	if err := ic.startDB(ctx, c, "ovsdb-server:zone-sb:"+zone, dir, "sb", ovsdist.Schema("ovn-sb")); err != nil {
		return err
	}
	if err := ic.startNorthd(ctx, c, zone, "ovn-northd:"+zone, []string{"OVN_RUNDIR=" + dir}); err != nil {
		return err
	}
	nb, _ := ic.zoneDBs(zone)
	if _, err := nbctl(ctx, c, nb, "--may-exist", "lr-add", ClusterRouter); err != nil {
		return err
	}
	if err := ic.startIC(ctx, c, zone, dir); err != nil {
		return err
	}
	if err := ic.joinTransit(ctx, c, zone, n.Name); err != nil {
		return err
	}
	// 2. The global zone's transit gateway goes to a node that stays, if any.
	if err := ic.moveGlobalGateway(ctx, c, n.Name); err != nil {
		return err
	}
	return ic.finishOut(ctx, c, n)
}

// finishOut points the node at its zone and moves its switch and chassis
// there; every step may run again (a move retried after a failed check).
func (ic *Interconnect) finishOut(ctx context.Context, c Commands, n Node) error {
	nb, sb := ic.zoneDBs(n.Name)
	centralNB, centralSB := ic.centralDBs()
	// A node that was the global zone's transit gateway stops being it as its
	// switch leaves.
	var fromNB string
	var fromExtra []string
	if ic.CentralUp() == nil {
		fromNB = centralNB
		if gw, err := ic.globalGateway(ctx, c); err != nil {
			return err
		} else if gw == n.Name {
			fromExtra = []string{"--", "lrp-del-gateway-chassis", "rtr-ts-" + GlobalZone, n.Name}
		}
	}
	remote := []string{"set", "open", ".", "external_ids:ovn-remote=" + sb, "external_ids:ovn-is-interconn=true"}
	if err := ic.moveSwitch(ctx, c, n, remote, fromNB, nb, fromExtra, nil); err != nil {
		return err
	}
	// Only once the node is connected to the new SB and the interconnect knows
	// it as the zone's gateway, its chassis in the old SB becomes the remote
	// record the global zone needs of it: kept, not deleted and made again, so
	// the global nodes' tunnels to it stay.
	if err := ic.takeOverChassis(ctx, c, sb, n.Name); err != nil {
		return err
	}
	if err := ic.handOverGateway(ctx, c, n.Name, n.Name); err != nil {
		return err
	}
	if ic.CentralUp() != nil {
		return nil
	}
	out, err := sbctl(ctx, c, centralSB, "--bare", "--columns=name", "find", "chassis", "name="+n.Name)
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	_, err = sbctl(ctx, c, centralSB, "remove", "chassis", n.Name, "other_config", "is-interconn",
		"--", "set", "chassis", n.Name, "other_config:is-remote=true",
		"--", "--if-exists", "destroy", "chassis_private", n.Name)
	return err
}

// moveIn moves a node from its own zone back into the global zone, and
// stops its zone.
func (ic *Interconnect) moveIn(ctx context.Context, c Commands, n Node) error {
	return ic.finishIn(ctx, c, n)
}

// finishIn points the node at the global zone, moves its switch there and
// stops its own zone; every step may run again (a move retried after a
// failed check).
func (ic *Interconnect) finishIn(ctx context.Context, c Commands, n Node) error {
	nb, _ := ic.zoneDBs(n.Name)
	centralNB, centralSB := ic.centralDBs()
	zoneUp := ic.Lab.Daemons()["ovsdb-server:zone-nb:"+n.Name]
	gw, adopt, err := ic.adoptsGateway(ctx, c, n.Name)
	if err != nil {
		return err
	}
	remote := []string{"set", "open", ".", "external_ids:ovn-remote=" + centralSB, fmt.Sprintf("external_ids:ovn-is-interconn=%t", adopt)}
	var fromNB string
	if zoneUp {
		fromNB = nb
	}
	var toExtra []string
	if adopt && gw != n.Name {
		if gw != "" {
			toExtra = append(toExtra, "--", "lrp-del-gateway-chassis", "rtr-ts-"+GlobalZone, gw)
		}
		toExtra = append(toExtra, "--", "lrp-set-gateway-chassis", "rtr-ts-"+GlobalZone, n.Name, "1")
	}
	if err := ic.moveSwitch(ctx, c, n, remote, fromNB, centralNB, nil, toExtra); err != nil {
		return err
	}
	if err := ic.takeOverChassis(ctx, c, centralSB, n.Name); err != nil {
		return err
	}
	if adopt {
		if err := ic.handOverGateway(ctx, c, n.Name, GlobalZone); err != nil {
			return err
		}
	}
	if !zoneUp {
		return nil
	}
	return ic.stopZone(ctx, c, n.Name)
}

// adoptsGateway says whether a node joining the global zone becomes its
// transit gateway, and which node the gateway is now ("" if none).
//
// A global zone whose transit gateway is on no global node (the first node
// to join a central zone started again) gets this node as its gateway in
// the same steps as the node joins: registering it only once it is bound
// would add a full ovn-ic round to the node's pause.
func (ic *Interconnect) adoptsGateway(ctx context.Context, c Commands, node string) (gw string, adopt bool, err error) {
	gw, err = ic.globalGateway(ctx, c)
	if err != nil {
		return "", false, err
	}
	if gw == "" || gw == node {
		return gw, true, nil
	}
	z, err := ic.ZoneOf(ctx, c, gw)
	if err != nil {
		return "", false, err
	}
	return gw, z != GlobalZone, nil
}

// stopZone stops the zone of a node that has left it.
func (ic *Interconnect) stopZone(ctx context.Context, r Runner, node string) error {
	nb, sb := ic.zoneDBs(node)
	if _, err := sbctl(ctx, r, sb, "--if-exists", "chassis-del", node); err != nil {
		return err
	}
	// The zone goes: its transit port first (its routes are withdrawn), then its daemons.
	if _, err := nbctl(ctx, r, nb, "--if-exists", "lsp-del", "ts-"+node, "--", "--if-exists", "lrp-del", "rtr-ts-"+node); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // ovn-ic withdraws the zone's routes
	ic.Lab.StopDaemons("ovn-ic:"+node, "ovn-northd:"+node, "ovsdb-server:zone-nb:"+node, "ovsdb-server:zone-sb:"+node)
	return nil
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
func (ic *Interconnect) takeOverChassis(ctx context.Context, r Runner, sb, node string) error {
	if err := poll.Until(ctx, 10*time.Millisecond, 15*time.Second, func(ctx context.Context) (bool, error) {
		out, err := sbctl(ctx, r, sb, "--bare", "--columns=name", "find", "chassis_private", "name="+node)
		return err == nil && strings.TrimSpace(out) == node, nil
	}, func() error { return fmt.Errorf("ovn-controller of %s did not connect to %s within 15s", node, sb) }); err != nil {
		return err
	}
	_, err := sbctl(ctx, r, sb, "remove", "chassis", node, "other_config", "is-remote")
	return err
}
