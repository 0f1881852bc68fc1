// Package lab builds a real multi-node Kubernetes cluster on one machine:
// every node a network namespace with its own Open vSwitch, tunnels between
// nodes over an underlay (or OVN), and a mount namespace of its own in which
// its containerd, kubelet and kube-proxy run; the real control plane; netshift
// installed from config/ as pods; the probe's workload pods. Everything it
// creates is recorded under one state directory so that `lab down` removes it
// all, and nothing else, even after a crash halfway.
package lab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/lab/kubenode"
	"netshift.io/netshift/internal/lab/ovnk"
)

// Tunnel is the encapsulation between nodes: the API's, so the lab and the
// live change agree on names and overheads.
type Tunnel = v1alpha1.Encapsulation

const (
	VXLAN  = v1alpha1.EncapVXLAN
	Geneve = v1alpha1.EncapGeneve
)

// Options describe a lab.
type Options struct {
	Name        string
	Nodes       int
	PodsPerNode int
	Tunnel      Tunnel
	OVN         bool
	UnderlayMTU int
	// MTU is the pod MTU; 0 means the underlay MTU minus the tunnel overhead.
	MTU int
	// NodeLabels are extra labels per node name.
	NodeLabels map[string]map[string]string `json:"nodeLabels,omitempty"`
	// AgentArgs are extra arguments for a node's agent (tests: --clock-offset, --fail-step-once).
	AgentArgs map[string][]string `json:"agentArgs,omitempty"`
	// Zones is the OVN interconnect layout to build: legacy (central, no zones), single (one
	// zone "global" with interconnect) or multi (a zone per node). OVN only; default single.
	Zones string `json:"zones,omitempty"`
	// Neutron runs a real neutron-server with ML2/OVN on the lab's central OVN
	// databases, and netshift's port pools: pods of namespaces labelled
	// netshift.io/port-pools=enabled get Neutron ports, wired by netshift-cni.
	// OVN without interconnect zones only (--zones legacy).
	Neutron bool `json:"neutron,omitempty"`
	// TrunkNodes are nodes set up as VMs with a Neutron trunk (--neutron
	// only): a parent port bound to the node, its trunk, and a trunk bridge
	// whose uplink carries the parent's VLANs; their pooled pods get subports.
	TrunkNodes []string `json:"trunkNodes,omitempty"`
	// Layout is where the nodes' runtime socket and CNI files are (containerd,
	// crio or k3s; "" is containerd): the lab's containerd serves where that
	// runtime would, and netshift goes in with that runtime's component.
	Layout string `json:"layout,omitempty"`
	// CNIConf makes the stand-in network plugin write a .conf, not a .conflist.
	CNIConf bool `json:"cniConf,omitempty"`
	// WithoutNetshift brings the lab up as a cluster netshift is yet to be installed on: its
	// network plugin and pods, netshift's manifests written out (config/) but not applied, no
	// NetshiftNetwork. Plain VXLAN or Geneve only.
	WithoutNetshift bool `json:"withoutNetshift,omitempty"`
	// OVNKubernetes is a directory holding OVN-Kubernetes' binaries (ovnkube,
	// ovn-k8s-cni-overlay, ovn-kube-util): the lab's network plugin is then the
	// real OVN-Kubernetes, one zone per node, run as pods from the lab's manifests.
	OVNKubernetes string `json:"ovnKubernetes,omitempty"`
	// FailReboots are real nodes whose reboot, asked by their agent's node-restore action,
	// fails (tests of a restore that fails).
	FailReboots []string `json:"failReboots,omitempty"`
}

// installErr names what is wrong with how the nodes are laid out and how
// netshift goes onto them.
func (o Options) installErr() error {
	if _, err := kubenode.ParseLayout(o.Layout); err != nil {
		return fmt.Errorf("--node-layout: %w", err)
	}
	if o.WithoutNetshift && o.OVN {
		return fmt.Errorf("--without-netshift: a lab without netshift is plain VXLAN or Geneve (its OVN mode needs netshift's objects)")
	}
	return nil
}

// pluginErr names what is wrong with the network plugin the options ask for
// and its OVN interconnect zones.
func (o Options) pluginErr() error {
	switch {
	case o.OVNKubernetes != "":
		return o.ovnKubernetesErr()
	case o.Zones != "" && !o.OVN:
		return fmt.Errorf("--zones: OVN interconnect zones need --ovn or --ovn-kubernetes")
	case o.OVN && o.Zones != ZonesLegacy && o.Zones != ZonesSingle && o.Zones != ZonesMulti:
		return fmt.Errorf("--zones: %q is not legacy, single or multi", o.Zones)
	}
	return nil
}

// ovnKubernetesErr names what does not go with --ovn-kubernetes.
func (o Options) ovnKubernetesErr() error {
	switch {
	case o.OVN || o.Neutron:
		return fmt.Errorf("--ovn-kubernetes: the real OVN-Kubernetes is the lab's network plugin: it goes without --ovn and --neutron (the lab's own OVN)")
	case o.Zones != ZonesLegacy && o.Zones != ZonesSingle && o.Zones != ZonesMulti:
		return fmt.Errorf("--zones: %q is not legacy, single or multi", o.Zones)
	case o.Layout != "" && o.Layout != kubenode.ContainerdLayout.Name:
		return fmt.Errorf("--node-layout %s: with --ovn-kubernetes the nodes run containerd", o.Layout)
	case o.WithoutNetshift || o.CNIConf:
		return fmt.Errorf("--ovn-kubernetes: goes without --without-netshift and --cni-conf")
	}
	for _, b := range ovnk.Binaries {
		if st, err := os.Stat(filepath.Join(o.OVNKubernetes, b)); err != nil || st.Mode()&0o111 == 0 {
			return fmt.Errorf("--ovn-kubernetes %s: no executable %s in it (it must hold %s, built from OVN-Kubernetes' go-controller)",
				o.OVNKubernetes, b, strings.Join(ovnk.Binaries, ", "))
		}
	}
	return nil
}

// unknownNode is the first of names that is not a node of the lab ("" if none).
func unknownNode(o Options, names []string) string {
	for _, name := range names {
		var i int
		if _, err := fmt.Sscanf(name, "node-%d", &i); err != nil || i < 1 || i > o.Nodes || fmt.Sprintf("node-%d", i) != name {
			return name
		}
	}
	return ""
}

var labName = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)

// DefaultOptions is the lab `lab up` builds without flags: 3 nodes with 2
// pods each, VXLAN, a 1500-byte underlay (the pod MTU follows from it).
func DefaultOptions() Options {
	return Options{Name: "lab", Nodes: 3, PodsPerNode: 2, Tunnel: VXLAN, UnderlayMTU: 1500}
}

// Derive fills what follows from the other options: Neutron's OVN without
// zones, OVN's Geneve tunnel and single zone, and an unset (0) pod MTU as the underlay's minus the tunnel's
// overhead. Zero counts are not filled in: Validate refuses them.
func (o *Options) Derive() {
	if o.Neutron {
		o.OVN = true
		if o.Zones == "" {
			o.Zones = ZonesLegacy
		}
	}
	if o.OVN {
		o.Tunnel = Geneve
		if o.Zones == "" {
			o.Zones = ZonesSingle
		}
	}
	if o.OVNKubernetes != "" {
		o.Tunnel = Geneve
		if o.Zones == "" {
			o.Zones = ZonesMulti
		}
	}
	if o.MTU == 0 {
		o.MTU = o.UnderlayMTU - int(o.Tunnel.Overhead())
	}
}

// Validate names the flag and the allowed range of anything out of bounds.
func (o Options) Validate() error {
	switch {
	case !labName.MatchString(o.Name):
		return fmt.Errorf("--name: %q must be 1 to 8 lowercase letters or digits, starting with a letter (it is part of interface and namespace names)", o.Name)
	case o.Nodes < 1 || o.Nodes > 50:
		return fmt.Errorf("--nodes: %d is outside 1..50", o.Nodes)
	case o.PodsPerNode < 0 || o.PodsPerNode > 50:
		return fmt.Errorf("--pods-per-node: %d is outside 0..50", o.PodsPerNode)
	case o.Tunnel != VXLAN && o.Tunnel != Geneve:
		return fmt.Errorf("--tunnel: %q is not vxlan or geneve", o.Tunnel)
	case o.pluginErr() != nil:
		return o.pluginErr()
	case o.Neutron && (!o.OVN || o.Zones != ZonesLegacy):
		return fmt.Errorf("--neutron: Neutron's ML2/OVN writes the central OVN databases: it needs --ovn --zones legacy")
	case len(o.TrunkNodes) > 0 && !o.Neutron:
		return fmt.Errorf("--neutron-trunk-node: a trunk is Neutron's: it needs --neutron")
	case unknownNode(o, o.TrunkNodes) != "":
		return fmt.Errorf("--neutron-trunk-node: %q is not a node of this lab (node-1..node-%d)", unknownNode(o, o.TrunkNodes), o.Nodes)
	case unknownNode(o, o.FailReboots) != "":
		return fmt.Errorf("--fail-reboot: %q is not a node of this lab (node-1..node-%d)", unknownNode(o, o.FailReboots), o.Nodes)
	case o.installErr() != nil:
		return o.installErr()
	case hookLabelsErr(o.AgentArgs) != nil:
		return hookLabelsErr(o.AgentArgs)
	case o.OVN && o.Tunnel != Geneve:
		return fmt.Errorf("--tunnel: OVN mode uses geneve, not %s", o.Tunnel)
	case o.UnderlayMTU < 1280 || o.UnderlayMTU > 9000:
		return fmt.Errorf("--underlay-mtu: %d is outside 1280..9000", o.UnderlayMTU)
	case o.MTU < 576 || o.MTU > o.UnderlayMTU-int(o.Tunnel.Overhead()):
		return fmt.Errorf("--mtu: %d is outside 576..%d (the underlay MTU %d minus the %s overhead of %d)",
			o.MTU, o.UnderlayMTU-int(o.Tunnel.Overhead()), o.UnderlayMTU, o.Tunnel, o.Tunnel.Overhead())
	}
	return nil
}

// NodeSpec is one node of the lab.
type NodeSpec struct {
	Index      int    `json:"index"`
	Name       string `json:"name"`       // the Kubernetes Node name
	Netns      string `json:"netns"`      // for `ip netns exec`
	UnderlayIP string `json:"underlayIP"` // on the node's gateway bridge
	PodCIDR    string `json:"podCIDR"`    // this node's /24
	// UnderlayPort is the veth end in the underlay namespace that joins this node.
	UnderlayPort string `json:"underlayPort"`
}

// PodSpec is one of the lab's workload pods, as the API and its node's
// runtime have it.
type PodSpec struct {
	Name  string `json:"name"` // the Kubernetes Pod name (namespace "lab")
	Node  string `json:"node"`
	Netns string `json:"netns"` // the pod's network namespace, through its sandbox's process
	IP    string `json:"ip"`
}

// Topology is every name and address of a lab: a pure function of Options.
type Topology struct {
	UnderlayNetns string     `json:"underlayNetns"`
	Nodes         []NodeSpec `json:"nodes"`
}

// PodNamespace is the Kubernetes namespace of the lab's pods.
const PodNamespace = "lab"

// Addresses come from 198.18.0.0/15, reserved for benchmarking, so they can
// never be mistaken for anything real: pods in 198.18.0.0/16 (node i has
// 198.18.i.0/24), the underlay in 198.19.0.0/24.
var (
	podNet      = netip.MustParsePrefix("198.18.0.0/16")
	underlayNet = netip.MustParsePrefix("198.19.0.0/24")
)

// Plan computes the topology.
func Plan(o Options) Topology {
	t := Topology{UnderlayNetns: fmt.Sprintf("%s%s-ul", NamePrefix, o.Name)}
	for i := 1; i <= o.Nodes; i++ {
		n := NodeSpec{
			Index:        i,
			Name:         fmt.Sprintf("node-%d", i),
			Netns:        fmt.Sprintf("%s%s-n%d", NamePrefix, o.Name, i),
			UnderlayIP:   nth(underlayNet, i).String(),
			PodCIDR:      fmt.Sprintf("198.18.%d.0/24", i),
			UnderlayPort: fmt.Sprintf("ul%d", i),
		}
		t.Nodes = append(t.Nodes, n)
	}
	return t
}

func nth(p netip.Prefix, i int) netip.Addr {
	a := p.Addr().As4()
	a[3] += byte(i)
	return netip.AddrFrom4(a)
}

// Node returns the node of that name.
func (t Topology) Node(name string) (NodeSpec, bool) {
	for _, n := range t.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return NodeSpec{}, false
}
