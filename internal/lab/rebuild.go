package lab

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/nodeconfig"
)

// NetworkConfigPath is the node's network configuration file, the agent's at
// its standard path inside the node (/var/lib/netshift/network.json): what
// netshift-cni sets new pods up from. The agent rewrites it at the end of a
// live change; the lab writes the first one, from what it built.
func (s *State) NetworkConfigPath(node string) string {
	n, _ := s.Topology.Node(node)
	return s.kubeNode(n, "").Path("/var/lib/netshift/network.json")
}

// BootIDPath is the node's boot ID file, in the node's lab directory, where its
// agent reads it; the lab's reboot of the node renews it.
func (s *State) BootIDPath(node string) string {
	return filepath.Join(s.labDir(node), "boot_id")
}

// writeNodeFiles records what the node was built with and gives it a boot ID.
func (s *State) writeNodeFiles(node string) error {
	if err := s.writeLabDir(node); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if s.Options.OVN {
		if err := s.setNodeNB(node, s.NBDB()); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
	}
	if s.Options.WithoutNetshift {
		return s.renewBootID(node) // the node's network configuration is netshift's: none before it
	}
	encap := s.Options.Tunnel
	port := int32(4789)
	if encap == v1alpha1.EncapGeneve {
		port = 6081
	}
	cfg := v1alpha1.NodeNetworkConfig{MTU: int32(s.Options.MTU), Encapsulation: encap, TunnelPort: port}
	if err := nodeconfig.Write(s.NetworkConfigPath(node), nodeconfig.File{NodeNetworkConfig: cfg}); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	return s.renewBootID(node)
}

func (s *State) renewBootID(node string) error {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := fmt.Sprintf("%x-%x-%x-%x-%x\n", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	if err := os.MkdirAll(filepath.Dir(s.BootIDPath(node)), 0o755); err != nil {
		return fmt.Errorf("node %s: boot ID: %w", node, err)
	}
	if err := os.WriteFile(s.BootIDPath(node), []byte(id), 0o644); err != nil {
		return fmt.Errorf("node %s: boot ID: %w", node, err)
	}
	return nil
}

// RebuildNode is the lab's reboot of a node, asked by hand (the runbook's
// fix of a node whose restore failed): the supervisor reboots it as it does
// when the node's agent asks, and this returns once the node runs again on
// its new boot.
func (s *State) RebuildNode(ctx context.Context, node string) error {
	return s.rebootAndWait(ctx, node)
}
