package ovs

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"

	"netshift.io/netshift/internal/heldframes"
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
	if err := s.ofctl(ctx, n.Bridge, "", "packet-out", fmt.Sprintf("in_port=LOCAL,packet=%x,actions=output:%d", plug.RARPFrame(mac), ofport)); err != nil {
		return fmt.Errorf("announce port %s: %w", portID, err)
	}
	return nil
}

// ofctl runs ovs-ofctl on a bridge's OpenFlow management socket, beside the
// database's, with stdin if not empty.
func (s *Switch) ofctl(ctx context.Context, bridge, stdin, command string, args ...string) error {
	mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(s.Socket, "unix:")), bridge+".mgmt")
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ovs-ofctl", append([]string{command, mgmt}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("on %s: ovs-ofctl %s: %w: %s", bridge, command, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// HoldForVM makes a migration target's per-port bridge keep what comes from
// the integration bridge away from the VM's tap until the VM itself sends
// through it: once the port is activated ahead (Announce), OVN sends the
// target every frame of the migration, and a tap whose incoming VM does not
// run yet would queue them (up to 500), to be taken by the resumed VM before
// anything new, the rest of the new dropped. The flows do not name the tap:
// a hypervisor may create it after the port is ready, or at the resume.
//
// The held frames go to the bridge's own (LOCAL) port, where the agent keeps
// the newest (package heldframes); dropped there when nobody does. The first
// frame from any other port (the tap: the hypervisor's announcement) opens
// the way for good: learn actions install the patch-to-tap and tap-to-patch
// flows above the hold, and the way for the agent's frames to the tap (table
// 1). A copy of that first frame, sent to heldframes.Spoke, tells the agent
// to give the VM the frames that reached nobody while it was stopped or
// resuming, tagged with heldframes.VLAN; nothing else from the bridge's own
// port passes, and nothing from br-int is sent to heldframes.Spoke. Holding
// again changes nothing.
func (s *Switch) HoldForVM(ctx context.Context, portID string) error {
	n := plug.NamesFor(portID)
	ifaces, err := s.Interfaces(ctx, n.BridgePatch)
	if err != nil {
		return err
	}
	patch := ifaces[n.BridgePatch].OFPort
	if patch <= 0 {
		return fmt.Errorf("hold port %s for its VM: %s is not on %s (ofport %d)", portID, n.BridgePatch, n.Bridge, patch)
	}
	flows := fmt.Sprintf("priority=100,in_port=%[1]d,actions=LOCAL\n"+
		"priority=110,in_port=%[1]d,dl_dst=%[3]s,actions=drop\n"+
		"priority=90,actions=load:%[1]d->NXM_NX_REG0[0..15],"+
		"learn(table=0,priority=250,NXM_OF_IN_PORT[],output:NXM_NX_REG0[0..15]),"+
		"learn(table=0,priority=150,in_port=%[1]d,output:NXM_OF_IN_PORT[]),"+
		"learn(table=1,priority=100,output:NXM_OF_IN_PORT[]),"+
		"output:%[1]d,mod_dl_dst:%[3]s,LOCAL\n"+
		"priority=300,in_port=LOCAL,dl_vlan=%[2]d,actions=strip_vlan,resubmit(,1)\n"+
		"priority=290,in_port=LOCAL,actions=drop\n", patch, heldframes.VLAN, heldframes.Spoke)
	if err := s.ofctl(ctx, n.Bridge, flows, "add-flows", "-"); err != nil {
		return fmt.Errorf("hold port %s for its VM: %w", portID, err)
	}
	return nil
}
