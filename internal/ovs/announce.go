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
