package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"netshift.io/netshift/internal/lab/ovnk"
)

func TestOptionsDefaultsAndValidation(t *testing.T) {
	o := DefaultOptions()
	o.Derive()
	if err := o.Validate(); err != nil {
		t.Fatalf("the default lab: %v", err)
	}
	if o.Name != "lab" || o.Nodes != 3 || o.PodsPerNode != 2 || o.Tunnel != VXLAN || o.UnderlayMTU != 1500 || o.MTU != 1450 {
		t.Fatalf("defaults = %+v", o)
	}
	g := DefaultOptions()
	g.OVN, g.UnderlayMTU = true, 9000
	g.Derive()
	if g.Tunnel != Geneve || g.MTU != 8942 {
		t.Fatalf("OVN defaults = %+v, want geneve and MTU 9000-58", g)
	}
	for _, c := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Name = "Lab" }, "--name"},
		{func(o *Options) { o.Name = "toolongname" }, "--name"},
		{func(o *Options) { o.Nodes = 51 }, "--nodes: 51 is outside 1..50"},
		{func(o *Options) { o.Nodes = 0 }, "--nodes: 0 is outside 1..50"},
		{func(o *Options) { o.PodsPerNode = -1 }, "--pods-per-node"},
		{func(o *Options) { o.Tunnel = "gre" }, `--tunnel: "gre"`},
		{func(o *Options) { o.UnderlayMTU = 1000 }, "--underlay-mtu: 1000 is outside 1280..9000"},
		{func(o *Options) { o.UnderlayMTU = 0 }, "--underlay-mtu: 0 is outside 1280..9000"},
		{func(o *Options) { o.MTU = 1451 }, "--mtu: 1451 is outside 576..1450"},
		{func(o *Options) { o.Tunnel, o.MTU = Geneve, 1450 }, "--mtu: 1450 is outside 576..1442"},
		{func(o *Options) { o.MTU = 500 }, "--mtu: 500"},
		{func(o *Options) { o.TrunkNodes = []string{"node-2"} }, "--neutron-trunk-node: a trunk is Neutron's: it needs --neutron"},
		{func(o *Options) { o.Neutron, o.TrunkNodes = true, []string{"node-4"} }, `--neutron-trunk-node: "node-4" is not a node of this lab (node-1..node-3)`},
		{func(o *Options) { o.OVNKubernetes = t.TempDir() }, "--ovn-kubernetes " + os.TempDir()},
		{func(o *Options) { o.OVNKubernetes = ovnkBinaries(t) }, ""},
		{func(o *Options) { o.OVNKubernetes, o.OVN = ovnkBinaries(t), true }, "--ovn-kubernetes: the real OVN-Kubernetes is the lab's network plugin: it goes without --ovn"},
		{func(o *Options) { o.OVNKubernetes, o.Zones = ovnkBinaries(t), "zoned" }, `--zones: "zoned" is not legacy, single or multi`},
		{func(o *Options) { o.OVNKubernetes, o.Layout = ovnkBinaries(t), "crio" }, "--node-layout crio: with --ovn-kubernetes the nodes run containerd"},
		{func(o *Options) { o.Zones = ZonesMulti }, "--zones: OVN interconnect zones need --ovn or --ovn-kubernetes"},
	} {
		o := DefaultOptions()
		c.set(&o)
		o.Derive()
		err := o.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: err = %v, want none", o, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want it to say %q", o, err, c.want)
		}
	}
	o = DefaultOptions()
	o.PodsPerNode = 0
	o.Derive()
	if err := o.Validate(); err != nil || o.PodsPerNode != 0 {
		t.Errorf("a lab without probe pods: %v, %d pods per node", err, o.PodsPerNode)
	}
}

func TestPlanNamesAndAddresses(t *testing.T) {
	o := DefaultOptions()
	o.Name, o.Nodes, o.PodsPerNode = "x", 12, 3
	o.Derive()
	top := Plan(o)
	if len(top.Nodes) != 12 {
		t.Fatalf("plan: %d nodes", len(top.Nodes))
	}
	seen := map[string]bool{}
	for _, n := range top.Nodes {
		for _, v := range []string{n.Netns, n.UnderlayIP, n.PodCIDR} {
			if seen[v] {
				t.Errorf("duplicate %s", v)
			}
			seen[v] = true
		}
		if !strings.HasPrefix(n.UnderlayIP, "198.19.0.") {
			t.Errorf("underlay %s outside 198.19.0.0/24", n.UnderlayIP)
		}
	}
	if n, ok := top.Node("node-12"); !ok || n.PodCIDR != "198.18.12.0/24" {
		t.Errorf("node-12 = %+v", n)
	}
}

// ovnkBinaries is a directory with files named as OVN-Kubernetes' binaries.
func ovnkBinaries(t *testing.T) string {
	dir := t.TempDir()
	for _, b := range ovnk.Binaries {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
