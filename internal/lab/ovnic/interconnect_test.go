package ovnic

import (
	"slices"
	"testing"

	"netshift.io/netshift/internal/lab/labcni"
)

func testInterconnect() *Interconnect {
	return &Interconnect{OVNDir: "/lab/ovn", Nodes: []Node{
		{Name: "node-1", Index: 1, Dir: "/lab/nodes/node-1"},
		{Name: "node-12", Index: 12, Dir: "/lab/nodes/node-12"},
	}}
}

// Each zone's router port on the transit switch has an address and MAC of
// its own: the global zone's .254, a node's zone its index.
func TestTransitAddresses(t *testing.T) {
	ic := testInterconnect()
	for _, c := range []struct{ zone, mac, cidr string }{
		{GlobalZone, "0a:58:c6:12:fe:fe", "198.18.254.254/24"},
		{"node-1", "0a:58:c6:12:fe:01", "198.18.254.1/24"},
		{"node-12", "0a:58:c6:12:fe:0c", "198.18.254.12/24"},
	} {
		if mac, cidr := ic.tsAddr(c.zone); mac != c.mac || cidr != c.cidr {
			t.Errorf("zone %s: transit port %s %s, want %s %s", c.zone, mac, cidr, c.mac, c.cidr)
		}
	}
}

// The global zone's databases are the lab's central ones; a node's zone
// has its own in the node's directory.
func TestZoneDatabases(t *testing.T) {
	ic := testInterconnect()
	for _, c := range []struct{ zone, nb, sb string }{
		{GlobalZone, "unix:/lab/ovn/nb.sock", "unix:/lab/ovn/sb.sock"},
		{"node-12", "unix:/lab/nodes/node-12/zone/nb.sock", "unix:/lab/nodes/node-12/zone/sb.sock"},
	} {
		if nb, sb := ic.zoneDBs(c.zone); nb != c.nb || sb != c.sb {
			t.Errorf("zone %s: databases %s %s, want %s %s", c.zone, nb, sb, c.nb, c.sb)
		}
	}
	if db := ic.icDB("sb"); db != "unix:/lab/ovn/icsb.sock" {
		t.Errorf("interconnect SB %s, want unix:/lab/ovn/icsb.sock", db)
	}
}

func TestGatewayChassis(t *testing.T) {
	for out, want := range map[string]string{
		"rtr-ts-global-node-3     1\n": "node-3",
		"":                             "",
		"no gateway chassis\n":         "",
	} {
		if got := gatewayChassis(out); got != want {
			t.Errorf("gatewayChassis(%q) = %q, want %q", out, got, want)
		}
	}
}

// A pod's port made again in another zone keeps its addresses, its port
// security and the sandbox it is for, and nothing else of its external IDs.
func TestLogicalPortArgs(t *testing.T) {
	got := logicalPortArgs(Node{Name: "node-2"}, "p1", "0a:58:c6:12:02:0a 198.18.2.10", "other=x "+labcni.SandboxKey+"=abc")
	want := []string{"--", "--may-exist", "lsp-add", "ls-node-2", "p1", "--", "lsp-set-addresses", "p1", "0a:58:c6:12:02:0a 198.18.2.10",
		"--", "lsp-set-port-security", "p1", "0a:58:c6:12:02:0a 198.18.2.10",
		"--", "set", "logical_switch_port", "p1", "external_ids:" + labcni.SandboxKey + "=abc"}
	if !slices.Equal(got, want) {
		t.Errorf("logicalPortArgs = %q\nwant %q", got, want)
	}
}

// A node's switch joins a zone's router with the router port it had in the
// central zone.
func TestNodeRouterArgsKeepTheRouterPort(t *testing.T) {
	n := Node{Name: "node-4", Index: 4}
	got := nodeRouterArgs(n)
	central := RouterSwitchArgs("ls-node-4", "rtr-node-4", RouterMAC(4), "198.18.4.1/24")
	if !slices.Equal(got[2:6], central[4:8]) {
		t.Errorf("router port %q, want the central zone's %q", got[2:6], central[4:8])
	}
}
