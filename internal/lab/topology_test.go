package lab

import (
	"strings"
	"testing"
)

func TestOptionsDefaultsAndValidation(t *testing.T) {
	o := Options{}
	o.Defaults()
	if o.Name != "lab" || o.Nodes != 3 || o.PodsPerNode != 2 || o.Tunnel != VXLAN || o.UnderlayMTU != 1500 || o.MTU != 1450 {
		t.Fatalf("defaults = %+v", o)
	}
	g := Options{OVN: true, UnderlayMTU: 9000}
	g.Defaults()
	if g.Tunnel != Geneve || g.MTU != 8942 {
		t.Fatalf("OVN defaults = %+v, want geneve and MTU 9000-58", g)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Name: "Lab"}, "--name"},
		{Options{Name: "toolongname"}, "--name"},
		{Options{Nodes: 51}, "--nodes: 51 is outside 1..50"},
		{Options{PodsPerNode: -1}, "--pods-per-node"},
		{Options{Tunnel: "gre"}, `--tunnel: "gre"`},
		{Options{UnderlayMTU: 1000}, "--underlay-mtu: 1000 is outside 1280..9000"},
		{Options{MTU: 1451}, "--mtu: 1451 is outside 576..1450"},
		{Options{Tunnel: Geneve, MTU: 1450}, "--mtu: 1450 is outside 576..1442"},
		{Options{MTU: 500}, "--mtu: 500"},
	} {
		o := c.o
		o.Defaults()
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want it to say %q", c.o, err, c.want)
		}
	}
}

func TestPlanNamesAndAddresses(t *testing.T) {
	o := Options{Name: "x", Nodes: 12, PodsPerNode: 3}
	o.Defaults()
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
