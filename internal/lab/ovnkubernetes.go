package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/lab/ovnk"
)

// runsOVNKubernetes says whether the lab's network plugin is the real
// OVN-Kubernetes, from the binaries given to --ovn-kubernetes.
func (s *State) runsOVNKubernetes() bool { return s.Options.OVNKubernetes != "" }

// gatewayBridge is the node's bridge onto the underlay, which holds its address.
func (s *State) gatewayBridge() string {
	if s.runsOVNKubernetes() {
		return ovnk.GatewayBridge
	}
	return "br-phy"
}

// prepareForOVNKubernetes makes the node's switch what ovnkube expects to
// find: br-int in secure mode with no tunnels of the lab's (ovn-controller
// makes them), the node's system-id, and every bridge of the userspace datapath.
func (s *State) prepareForOVNKubernetes(ctx context.Context, sh *shell, n NodeSpec) error {
	if _, err := s.vsctl(ctx, sh, n.Name, "set", "bridge", "br-int", "fail_mode=secure",
		"--", "set", "open_vswitch", ".", "external_ids:system-id="+n.Name, "external_ids:ovn-bridge-datapath-type=netdev"); err != nil {
		return fmt.Errorf("node %s: switch for OVN-Kubernetes: %w", n.Name, err)
	}
	return nil
}

// ovnkBinds are the node's own directories OVN-Kubernetes' pods use: its
// CNI server's socket, its zone databases' sockets, and the zone databases
// that outlive a pod's restart.
func (s *State) ovnkBinds(node string) map[string]string {
	return map[string]string{
		s.Path("nodes", node, "ovn-kubernetes", "ovn"): "/run/ovn",
		s.Path("nodes", node, "ovn-kubernetes", "run"): "/run/ovn-kubernetes",
		s.Path("nodes", node, "ovn-kubernetes", "lib"): "/var/lib/ovn-kubernetes",
	}
}

// ovnkImage writes the OVN-Kubernetes image from the given binaries.
func (s *State) ovnkImage() (string, error) {
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return "", err
	}
	img, err := ovnk.Image(s.Options.OVNKubernetes, "/bin/busybox", filepath.Join(assets, "kubectl"))
	if err != nil {
		return "", err
	}
	path := s.Path("images", "ovnkube.tar")
	if _, err := img.WriteArchiveFile(path); err != nil {
		return "", err
	}
	return path, nil
}

// startOVNKubernetes applies OVN-Kubernetes' manifests and waits until its
// pod on every node is ready: until then no pod of the pod network starts.
func (s *State) startOVNKubernetes(ctx context.Context, cp *controlplane.ControlPlane, kubeconfig string) error {
	central := s.Topology.Nodes[0]
	replicas := 1
	if s.Options.Zones == ZonesMulti {
		replicas = 0 // every node runs its own zone: the central one is retired
	}
	data, err := ovnk.Manifests(ovnk.Cluster{APIServer: cp.Admin.Host, ClusterSubnets: podNet.String() + "/24", ServiceCIDR: serviceCIDR,
		MTU: s.Options.MTU, EncapPort: 6081, ControlPlaneNode: central.Name, GatewayBridge: ovnk.GatewayBridge,
		CentralAddress: central.UnderlayIP, CentralReplicas: replicas, Interconnect: s.Options.Zones != ZonesLegacy})
	if err != nil {
		return err
	}
	file := s.Path("ovn-kubernetes.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(cp.AssetsDir, "kubectl"), "--kubeconfig", kubeconfig, "apply", "-f", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w: %s", file, err, out)
	}
	return s.waitOVNKubernetes(ctx, cp.Client, 4*time.Minute)
}

// waitOVNKubernetes waits until every node's ovnkube-node pod is ready.
func (s *State) waitOVNKubernetes(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var pods corev1.PodList
		err := c.List(ctx, &pods, client.InNamespace(ovnk.Namespace), client.MatchingLabels{"app": "ovnkube-node"})
		ready := map[string]bool{}
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready[p.Spec.NodeName] = true
				}
			}
		}
		var waiting []string
		for _, n := range s.Topology.Nodes {
			if !ready[n.Name] {
				waiting = append(waiting, n.Name)
			}
		}
		if err == nil && len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("OVN-Kubernetes not ready after %s on %v (%v): see kubectl -n %s logs", timeout, waiting, err, ovnk.Namespace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
