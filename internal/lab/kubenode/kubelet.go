package kubenode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// kubeletConfig is the node's KubeletConfiguration, with what these machines
// need: cgroup v1 allowed, cgroupfs below the node's own cgroup root, kernel
// defaults not enforced (the node's mount namespace gives it its own files
// for the sysctls it writes), serving on the node's address only. The lab's
// kubelets serve exec and logs to anyone who reaches the node's address,
// which only the lab's own namespaces do.
func (n Node) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
protectKernelDefaults: false
failSwapOn: false
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
volumePluginDir: /usr/libexec/kubernetes/kubelet-plugins/volume/exec
podLogsDir: /var/log/pods
maxPods: 110
nodeStatusUpdateFrequency: 4s
nodeStatusReportFrequency: 10s
syncFrequency: 10s
runtimeRequestTimeout: 2m
`, n.CgroupRoot, n.layout().Socket, n.IP)
}

// StartKubelet writes the node's kubelet configuration and starts the
// kubelet in the node's namespaces; it returns once its health endpoint
// answers (the lab waits for the Node to be Ready through the API).
func (n Node) StartKubelet(ctx context.Context, holder int, record Recorder) (int, error) {
	if n.Kubeconfig == "" || n.Kubelet == "" {
		return 0, fmt.Errorf("node %s: no kubelet binary or kubeconfig", n.Name)
	}
	if err := n.makeCgroupRoot(); err != nil {
		return 0, err
	}
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(n.kubeletConfig()), 0o644); err != nil {
		return 0, fmt.Errorf("node %s: %w", n.Name, err)
	}
	args := []string{"--config=" + cfg, "--kubeconfig=" + n.Kubeconfig, "--hostname-override=" + n.Name,
		"--node-ip=" + n.IP, "--root-dir=/var/lib/kubelet", "--v=1"}
	if len(n.Labels) > 0 {
		var l []string
		for k, v := range n.Labels {
			l = append(l, k+"="+v)
		}
		sort.Strings(l)
		args = append(args, "--node-labels="+strings.Join(l, ","))
	}
	pid, err := n.startInNode(holder, "kubelet", record, n.Kubelet, args...)
	if err != nil {
		return pid, err
	}
	// The health endpoint is on the node's loopback, inside its network namespace: the kubelet
	// serving on the node's address is the sign a process outside can use.
	return pid, n.waitFor(ctx, "serving", pid, "kubelet", 60*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(n.IP, "10250"), 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}
