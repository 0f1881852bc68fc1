package kubenode

import (
	"fmt"
	"path/filepath"
)

// Layout is where a node's container runtime and CNI keep their files: the
// distributions differ, and netshift's agent must find them where each puts
// them. The lab's nodes always run containerd; a layout puts its socket and
// the CNI directories where that distribution's runtime has them.
type Layout struct {
	Name string `json:"name"`
	// Socket is the CRI socket the kubelet and netshift's agent dial.
	Socket string `json:"socket"`
	// CNIConfDir and CNIBinDir are where the runtime reads the CNI
	// configuration and finds the plugins.
	CNIConfDir string `json:"cniConfDir"`
	CNIBinDir  string `json:"cniBinDir"`
}

// The layouts netshift's manifests have a component for (config/components/runtime-*).
var (
	ContainerdLayout = Layout{Name: "containerd", Socket: "/run/containerd/containerd.sock", CNIConfDir: "/etc/cni/net.d", CNIBinDir: "/opt/cni/bin"}
	// CRI-O's socket is /var/run/crio/crio.sock, /var/run being /run.
	CRIOLayout = Layout{Name: "crio", Socket: "/run/crio/crio.sock", CNIConfDir: "/etc/cni/net.d", CNIBinDir: "/opt/cni/bin"}
	// k3s runs its own containerd and keeps the CNI files below its data directory.
	K3sLayout = Layout{Name: "k3s", Socket: "/run/k3s/containerd/containerd.sock",
		CNIConfDir: "/var/lib/rancher/k3s/agent/etc/cni/net.d", CNIBinDir: "/var/lib/rancher/k3s/data/cni"}
)

// Layouts lists them by name.
var Layouts = map[string]Layout{ContainerdLayout.Name: ContainerdLayout, CRIOLayout.Name: CRIOLayout, K3sLayout.Name: K3sLayout}

// ParseLayout finds a layout by name ("" is containerd's).
func ParseLayout(name string) (Layout, error) {
	if name == "" {
		return ContainerdLayout, nil
	}
	l, ok := Layouts[name]
	if !ok {
		return Layout{}, fmt.Errorf("%q is not containerd, crio or k3s", name)
	}
	return l, nil
}

// layout is the node's, containerd's when none is set.
func (n Node) layout() Layout {
	if n.Layout.Name == "" {
		return ContainerdLayout
	}
	return n.Layout
}

// layoutPaths are the directories of the node's layout that are the node's own.
func (n Node) layoutPaths() []string {
	l := n.layout()
	return []string{filepath.Dir(l.Socket), l.CNIConfDir, l.CNIBinDir}
}
