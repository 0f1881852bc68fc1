package kubenode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// StartKubeProxy starts the node's kube-proxy (iptables mode, in the node's
// network namespace): Services reach their endpoints from the node, which is
// how host-network pods (netshift's agent and operator) reach the API server
// through the kubernetes Service, as on any cluster. It leaves the machine's
// conntrack table size alone.
func (n Node) StartKubeProxy(ctx context.Context, holder int, bin, kubeconfig, clusterCIDR string, record Recorder) (int, error) {
	cfg := filepath.Join(n.Dir, "kube-proxy.yaml")
	conf := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: %s
conntrack:
  maxPerCore: 0
iptables:
  localhostNodePorts: false
`, kubeconfig, n.Name, n.IP, clusterCIDR)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return 0, fmt.Errorf("node %s: %w", n.Name, err)
	}
	pid, err := n.startInNode(holder, "kube-proxy", record, bin, "--config="+cfg, "--v=1")
	if err != nil {
		return pid, err
	}
	// Alive a moment later: a bad configuration ends it at once.
	select {
	case <-ctx.Done():
		return pid, ctx.Err()
	case <-time.After(300 * time.Millisecond):
	}
	if !Alive(pid) {
		return pid, fmt.Errorf("node %s: kube-proxy exited at start; %s ends:\n%s", n.Name, n.LogPath("kube-proxy"), lastLines(n.LogPath("kube-proxy"), 15))
	}
	return pid, nil
}
