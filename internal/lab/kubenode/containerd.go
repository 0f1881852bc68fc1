package kubenode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// containerdConfig is the node's containerd 1.6 configuration, its socket and
// CNI directories where its layout has them: the CRI
// plugin with runc on cgroupfs (these machines have cgroup v1 and no
// systemd), its sandbox image the lab's own pause, the pods' network
// namespaces under its state directory (which is the node's own), and an
// oom_score_adj it never raises (root here lacks CAP_SYS_RESOURCE).
func (n Node) containerdConfig(pauseImage string) string {
	l := n.layout()
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[2]q

[ttrpc]
  address = "%[2]s.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[1]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "/run/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[3]q
    conf_dir = %[4]q
    max_conf_num = 1
`, pauseImage, l.Socket, l.CNIBinDir, l.CNIConfDir)
}

// StartContainerd writes the node's containerd configuration, starts it in
// the node's namespaces and waits for its socket.
func (n Node) StartContainerd(ctx context.Context, holder int, pauseImage string, record Recorder) (int, error) {
	cfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(n.containerdConfig(pauseImage)), 0o644); err != nil {
		return 0, fmt.Errorf("node %s: %w", n.Name, err)
	}
	pid, err := n.startInNode(holder, "containerd", record, "containerd", "--config", cfg)
	if err != nil {
		return pid, err
	}
	return pid, n.waitFor(ctx, "serving its socket", pid, "containerd", 30*time.Second, func() bool {
		c, err := net.Dial("unix", n.Socket())
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// ImportImages imports image archives into the node's containerd, in the
// namespace the CRI plugin uses.
func (n Node) ImportImages(ctx context.Context, archives ...string) error {
	for _, a := range archives {
		cmd := []string{"-a", n.Socket(), "-n", "k8s.io", "images", "import", a}
		if out, err := runCtx(ctx, "ctr", cmd...); err != nil {
			return fmt.Errorf("node %s: import %s: %w: %s", n.Name, a, err, out)
		}
	}
	return nil
}
