// Package ovnk runs the real OVN-Kubernetes on the lab's nodes, from
// binaries it is given: its image (the binaries, with the lab's OVN and Open
// vSwitch daemons and tools) and its manifests, laid out as OVN-Kubernetes'
// own deployment lays them out.
package ovnk

import (
	"fmt"
	"os"
	"path/filepath"

	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/ovs/ovsdist"
)

// Ref is the lab's OVN-Kubernetes image.
const Ref = "netshift.io/ovnkube:lab"

// Binaries are the files a directory given to the lab must hold: what
// OVN-Kubernetes' go-controller builds.
var Binaries = []string{"ovnkube", "ovn-k8s-cni-overlay", "ovn-kube-util"}

// daemons are the lab's OVN and OVS programs the pods run (ovsdist), with
// the tools ovnkube calls.
var daemons = []string{
	"ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-northd", "ovn-controller", "ovn-nbctl", "ovn-sbctl", "ovn-appctl",
	"ovs-vsctl", "ovs-ofctl", "ovs-appctl",
}

// hostTools are the machine's programs ovnkube calls: iptables, and nft
// (nftables 1.0.1 or newer), which ovnkube-node runs since v1.0.
var hostTools = []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/nft"}

// xtables is where iptables finds its matches and targets (loaded at run time).
const xtables = "/usr/lib/x86_64-linux-gnu/xtables"

var iptablesNames = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

var shellApplets = []string{"sh", "sleep", "cat", "sysctl", "mkdir", "rm", "cp", "ln", "echo", "test", "ls", "ip", "ps", "kill", "env", "true", "false", "hostname", "chmod", "grep"}

// Image is the image the lab's OVN-Kubernetes pods run; kubectl reads a
// node's zone label, as in OVN-Kubernetes' own image.
func Image(dir, busybox, kubectl string) (images.Image, error) {
	img := images.Image{Ref: Ref, Entrypoint: []string{"/bin/sh"}, Env: []string{"PATH=/usr/bin:/usr/sbin:/bin"}}
	places := map[string]string{"ovnkube": "/usr/bin/ovnkube", "ovn-kube-util": "/usr/bin/ovn-kube-util", "ovn-k8s-cni-overlay": "/usr/libexec/cni/ovn-k8s-cni-overlay"}
	for _, b := range Binaries {
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			return img, fmt.Errorf("--ovn-kubernetes %s: %w (it must hold %v, built from OVN-Kubernetes' go-controller)", dir, err, Binaries)
		}
		img.Files = append(img.Files, images.File{Path: places[b], Mode: 0o755, Data: data})
	}
	tools, err := images.OVSPrograms("/usr/bin", daemons...)
	if err != nil {
		return img, err
	}
	img.Files = append(img.Files, tools...)
	if tools, err = images.WithLibraries(hostTools...); err != nil {
		return img, fmt.Errorf("%w (hack/setup.sh installs iptables and nftables)", err)
	}
	img.Files = append(img.Files, tools...)
	modules, err := filepath.Glob(filepath.Join(xtables, "*.so"))
	if err != nil {
		return img, err
	}
	for _, m := range modules {
		f, err := images.HostFile(m, 0o644)
		if err != nil {
			return img, err
		}
		img.Files = append(img.Files, f)
	}
	for _, n := range iptablesNames {
		img.Files = append(img.Files, images.File{Path: "/usr/sbin/" + n, Link: "xtables-nft-multi"})
	}
	for _, db := range []string{"ovn-nb", "ovn-sb"} {
		f, err := images.HostFile(ovsdist.Schema(db), 0o644)
		if err != nil {
			return img, err
		}
		f.Path = "/usr/share/ovn/" + db + ".ovsschema"
		img.Files = append(img.Files, f)
	}
	kc, err := images.HostFile(kubectl, 0o755)
	if err != nil {
		return img, err
	}
	kc.Path = "/usr/bin/kubectl"
	img.Files = append(img.Files, kc, images.File{Path: ZoneScript, Mode: 0o644, Data: zoneScript})
	bb, err := images.HostFile(busybox, 0o755)
	if err != nil {
		return img, err
	}
	bb.Path = "/bin/busybox"
	img.Files = append(img.Files, bb)
	for _, a := range shellApplets {
		img.Files = append(img.Files, images.File{Path: "/bin/" + a, Link: "busybox"})
	}
	return img, img.Validate()
}
