package lab

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/ovs"
)

// NetworkConfigPath is the node's network configuration file: what its pods
// are built with (the lab's stand-in for the CNI configuration a real node's
// new pods are set up from). The agent rewrites it at the end of a live change.
//
// On real nodes it is the agent's, at its standard path inside the node
// (/var/lib/netshift/network.json), which netshift-cni reads.
func (s *State) NetworkConfigPath(node string) string {
	if s.Options.RealNodes {
		n, _ := s.Topology.Node(node)
		return s.kubeNode(n, "").Path("/var/lib/netshift/network.json")
	}
	return s.Path("nodes", node, "network.json")
}

// BootIDPath is the node's boot ID file; RebuildNode, the lab's reboot, renews it.
// On a real node it is in the node's lab directory, where its agent reads it.
func (s *State) BootIDPath(node string) string {
	if s.Options.RealNodes {
		return filepath.Join(s.labDir(node), "boot_id")
	}
	return s.Path("nodes", node, "boot_id")
}

// PodsFilePath lists the node's pods for its agent (a lab build reads it with
// --lab-pods): this lab's pods are namespaces with no container runtime.
func (s *State) PodsFilePath(node string) string { return s.Path("nodes", node, "pods.json") }

// writePodsFile writes the node's pods as its agent reads them.
func (s *State) writePodsFile(node string) error {
	n, _ := s.Topology.Node(node)
	pods := []agent.PodNetwork{}
	for _, p := range s.Topology.Pods {
		if p.Node == node {
			pods = append(pods, agent.PodNetwork{Pod: PodNamespace + "/" + p.Name, Netns: filepath.Join("/run/netns", p.Netns),
				Interfaces: []string{"eth0"}, HostInterfaces: []string{p.HostPort}})
		}
	}
	data, err := json.MarshalIndent(pods, "", "  ")
	if err == nil {
		err = os.WriteFile(s.PodsFilePath(n.Name), data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("node %s: pods file: %w", node, err)
	}
	return nil
}

// writeNodeFiles records what the node was built with and gives it a boot ID.
func (s *State) writeNodeFiles(node string) error {
	if !s.Options.RealNodes {
		if err := s.writePodsFile(node); err != nil {
			return err
		}
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

// RebuildNode is the lab's node-restore action, what a reboot is to a real
// node: it rebuilds the node's network from its network configuration (every
// pod's eth0 and host veth, the node's internal port, the tunnel ports in
// plain mode; OVN's tunnels belong to ovn-controller), gives the node a new
// boot ID and ends its agent, which the supervisor starts again, as a node's
// agent starts after a reboot.
func (s *State) RebuildNode(ctx context.Context, node string) error {
	if s.Options.RealNodes {
		// A real node's reboot stops its pods too: the lab's supervisor does it (its agents ask
		// through the node's lab directory), here asked the same way.
		return os.WriteFile(filepath.Join(s.labDir(node), "reboot"), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
	}
	n, ok := s.Topology.Node(node)
	if !ok {
		return fmt.Errorf("no node %q in lab %s", node, s.Options.Name)
	}
	cfg, err := nodeconfig.Read(s.NetworkConfigPath(node))
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	mtu := int(cfg.MTU)
	for _, p := range s.Topology.Pods {
		if p.Node != node {
			continue
		}
		for _, link := range []struct{ netns, name string }{{p.Netns, "eth0"}, {n.Netns, p.HostPort}} {
			h, err := netdev.Open(link.netns)
			if err != nil {
				return fmt.Errorf("node %s: pod %s: %w", node, p.Name, err)
			}
			err = h.SetMTU(link.name, mtu)
			h.Close()
			if err != nil {
				return fmt.Errorf("node %s: pod %s: %w", node, p.Name, err)
			}
		}
	}
	db := ovs.DB{Socket: s.OVSDB(node)}
	if !s.Options.OVN {
		if err := db.SetMTURequest(ctx, mtu, "br-int"); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		if _, err := db.SetTunnelPort(ctx, string(cfg.Encapsulation), int(cfg.TunnelPort)); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
	}
	if err := s.renewBootID(node); err != nil {
		return err
	}
	for _, p := range s.Processes {
		if p.Role == "agent:"+node && p.Alive() {
			_ = syscall.Kill(p.Pid, syscall.SIGTERM)
		}
	}
	return nil
}
