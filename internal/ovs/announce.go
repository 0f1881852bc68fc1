package ovs

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"

	"netshift.io/netshift/internal/plug"
)

// Announce sends the RARP of a resumed VM (plug.RARPFrame) into a per-port
// bridge's patch port, so that it reaches the integration bridge as if the VM
// had sent it: OVN's activation-strategy=rarp then unblocks the port on this
// chassis. Only the port bridge's patch port receives it (no tap). OVSDB
// cannot send a packet: this is ovs-ofctl's packet-out on the bridge's
// OpenFlow management socket, beside the database's.
func (s *Switch) Announce(ctx context.Context, portID string, mac net.HardwareAddr) error {
	n := plug.NamesFor(portID)
	ifaces, err := s.Interfaces(ctx, n.BridgePatch)
	if err != nil {
		return err
	}
	ofport := ifaces[n.BridgePatch].OFPort
	if ofport <= 0 {
		return fmt.Errorf("announce port %s: %s has no ofport", portID, n.BridgePatch)
	}
	mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(s.Socket, "unix:")), n.Bridge+".mgmt")
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ovs-ofctl", "packet-out", mgmt,
		fmt.Sprintf("in_port=LOCAL,packet=%x,actions=output:%d", plug.RARPFrame(mac), ofport)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("announce port %s into %s: ovs-ofctl packet-out: %w: %s", portID, n.Bridge, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// HoldForVM makes a migration target's per-port bridge keep what comes from
// the integration bridge away from the VM's tap until the VM itself sends
// through it: once the port is activated ahead (Announce), OVN sends the
// target every frame of the migration, and a tap whose incoming VM does not
// run yet would queue them (up to 500), to be taken by the resumed VM before
// anything new, the rest of the new dropped. The first frame from the tap (the
// hypervisor's announcement) opens the way for good: a learn action installs
// the patch-to-tap flow above the drop. Frames from the tap always pass.
// Holding again changes nothing.
func (s *Switch) HoldForVM(ctx context.Context, portID, tap string) error {
	n := plug.NamesFor(portID)
	ifaces, err := s.Interfaces(ctx, n.BridgePatch, tap)
	if err != nil {
		return err
	}
	patch, vm := ifaces[n.BridgePatch].OFPort, ifaces[tap].OFPort
	if patch <= 0 || vm <= 0 {
		return fmt.Errorf("hold port %s for its VM: %s (ofport %d) and %s (ofport %d) must both be on %s", portID, n.BridgePatch, patch, tap, vm, n.Bridge)
	}
	flows := fmt.Sprintf("priority=100,in_port=%d,actions=drop\n"+
		"priority=200,in_port=%d,actions=learn(table=0,priority=150,in_port=%d,output:NXM_OF_IN_PORT[]),NORMAL\n", patch, vm, patch)
	mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(s.Socket, "unix:")), n.Bridge+".mgmt")
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ovs-ofctl", "add-flows", mgmt, "-")
	cmd.Stdin = strings.NewReader(flows)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hold port %s for its VM on %s: ovs-ofctl add-flows: %w: %s", portID, n.Bridge, err, strings.TrimSpace(string(out)))
	}
	return nil
}
