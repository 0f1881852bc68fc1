package kubenode

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Node describes one lab node's Kubernetes side.
type Node struct {
	// Name is the Node's name; Netns its network namespace (under /run/netns).
	Name, Netns string
	// IP is the node's InternalIP: the kubelet serves on it.
	IP string
	// Dir is the node's own directory: every per-node path lives below it.
	Dir string
	// CgroupRoot is the node's cgroup, below which its pods run ("/lab-node-1").
	CgroupRoot string
	// Binds are extra per-node bind mounts, host path -> path inside the node.
	Binds map[string]string
	// Kubeconfig is the kubelet's identity (system:node:NAME).
	Kubeconfig string
	// Labels are set by the kubelet when it registers the Node.
	Labels map[string]string
	// Kubelet is the kubelet binary (hack/envtest-assets.sh builds it).
	Kubelet string
	// Layout is where its runtime's socket and the CNI files are (zero: containerd's).
	Layout Layout
	// CNIConf makes the node's network plugin write a single-plugin .conf, as
	// OVN-Kubernetes and Multus do, instead of a .conflist.
	CNIConf bool
	// CNIFile, when set, names the network plugin's configuration file (a .conflist).
	CNIFile string
	// Shared are the node's mount points made shared after the binds: mounts a
	// daemon makes below one later (containerd's pods' network namespaces)
	// reach the pods that mount it with HostToContainer propagation.
	Shared []string
}

var nodeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate names what is wrong with the description.
func (n Node) Validate() error {
	switch {
	case !nodeName.MatchString(n.Name):
		return fmt.Errorf("node name %q: want a DNS label", n.Name)
	case n.Netns == "" || filepath.Base(n.Netns) != n.Netns:
		return fmt.Errorf("node %s: network namespace %q: want a name under /run/netns", n.Name, n.Netns)
	case !filepath.IsAbs(n.Dir):
		return fmt.Errorf("node %s: directory %q: want an absolute path", n.Name, n.Dir)
	case !filepath.IsAbs(n.CgroupRoot) || filepath.Clean(n.CgroupRoot) != n.CgroupRoot || n.CgroupRoot == "/":
		return fmt.Errorf("node %s: cgroup root %q: want a clean absolute path below /", n.Name, n.CgroupRoot)
	case len(n.Socket()) > 107:
		return fmt.Errorf("node %s: directory %q is too long: the containerd socket below it, %s, would pass the 107 bytes a unix socket path may have",
			n.Name, n.Dir, n.Socket())
	}
	return nil
}

// The standard paths a node's components use, each bound inside the node's
// mount namespace to a directory of the node's own (with its layout's socket
// and CNI directories). They stay the standard ones so that what is installed
// from config/ (the agent's hostPath volumes, its CRI and OVS sockets) finds
// them where it would on any node.
var nodePaths = []string{
	"/var/lib/kubelet",
	"/var/lib/containerd",
	"/var/lib/cni",
	"/var/lib/netshift",
	"/var/log/pods",
	"/var/log/containers",
	"/run/containerd",
	// containerd's CNI directories, the node's own whatever its layout: nothing reaches the machine's.
	"/etc/cni/net.d",
	"/opt/cni/bin",
	"/usr/libexec/kubernetes/kubelet-plugins",
}

// kernelSettings are the sysctls the kubelet writes at start; inside the node
// each is a file of the node's own, so the machine's values never change.
var kernelSettings = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// Path is where a standard path of the node lives on the machine.
func (n Node) Path(inside string) string { return filepath.Join(n.Dir, "root", inside) }

// Socket is the node's CRI socket as seen from the machine.
func (n Node) Socket() string { return n.Path(n.layout().Socket) }

// binds lists every bind mount the node's mount namespace gets, creating the
// directories and files they need on both sides.
func (n Node) binds() ([][2]string, error) {
	var out [][2]string
	paths := slices.Clone(nodePaths)
	for _, p := range n.layoutPaths() {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		src := n.Path(p)
		for _, d := range []string{src, p} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		out = append(out, [2]string{src, p})
	}
	for src, dst := range n.Binds {
		for _, d := range []string{src, dst} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		out = append(out, [2]string{src, dst})
	}
	for key, value := range kernelSettings {
		f := filepath.Join(n.Dir, "sysctl", filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(f, []byte(value+"\n"), 0o644); err != nil {
			return nil, err
		}
		out = append(out, [2]string{f, "/proc/sys/" + key})
	}
	return out, nil
}
