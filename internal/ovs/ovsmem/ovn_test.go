package ovsmem_test

import (
	"context"
	"strings"
	"testing"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/model/nb"
	"netshift.io/netshift/internal/ovs/model/sb"
	"netshift.io/netshift/internal/ovs/ovsmem"
)

// Setting a logical switch port's options changes those keys and removes the
// ones asked, leaving the rest; a port that does not exist is an error that
// names it, and a read of it says it is not there.
func TestNorthboundPortOptions(t *testing.T) {
	endpoint := ovsmem.StartNorthbound(t)
	full, _ := nb.FullDatabaseModel()
	// A logical switch port lives in a switch (the database drops one that no switch holds).
	ovsmem.Insert(t, endpoint, full, &nb.LogicalSwitchPort{UUID: "lsp", Name: "vm-1",
		Options:     map[string]string{"requested-chassis": "node-1", "activation-strategy": "rarp", "keep": "me"},
		ExternalIDs: map[string]string{"netshift.io/namespace": "vms"}},
		&nb.LogicalSwitch{UUID: "ls", Name: "vms", Ports: []string{"lsp"}})
	n := ovs.NewNorthbound(endpoint)
	defer n.Close()
	ctx := context.Background()
	opts, ids, ok, err := n.Port(ctx, "vm-1")
	if err != nil || !ok || opts["requested-chassis"] != "node-1" || ids["netshift.io/namespace"] != "vms" {
		t.Fatalf("port vm-1: %v %v %v %v", opts, ids, ok, err)
	}
	if err := n.SetPortOptions(ctx, "vm-1", map[string]string{"requested-chassis": "node-2,node-1"}, []string{"activation-strategy"}); err != nil {
		t.Fatal(err)
	}
	opts, _, _ = n.PortOptions(ctx, "vm-1")
	if len(opts) != 2 || opts["requested-chassis"] != "node-2,node-1" || opts["keep"] != "me" {
		t.Errorf("options after the change: %v", opts)
	}
	if err := n.SetPortOptions(ctx, "nope", map[string]string{"requested-chassis": "node-1"}, nil); err == nil || !strings.Contains(err.Error(), "logical switch port nope") {
		t.Errorf("options of a missing port: %v", err)
	}
	if _, _, ok, err := n.Port(ctx, "nope"); ok || err != nil {
		t.Errorf("a missing port read as there: %v %v", ok, err)
	}
}

// The Geneve Encap records' port is set on all of them (or those named) in
// one transaction, their other options kept; VXLAN records are not Geneve's;
// a record whose port is not a number is an error that names it.
func TestSouthboundEncapPort(t *testing.T) {
	endpoint := ovsmem.StartSouthbound(t)
	full, _ := sb.FullDatabaseModel()
	// Each chassis holds its Encap records (the database drops one that no chassis holds).
	ovsmem.Insert(t, endpoint, full,
		&sb.Encap{UUID: "e1", ChassisName: "node-1", IP: "198.19.0.1", Type: sb.EncapTypeGeneve, Options: map[string]string{"csum": "true"}},
		&sb.Encap{UUID: "e2", ChassisName: "node-2", IP: "198.19.0.2", Type: sb.EncapTypeGeneve, Options: map[string]string{"csum": "true", "dst_port": "6081"}},
		&sb.Encap{UUID: "e3", ChassisName: "node-3", IP: "198.19.0.3", Type: sb.EncapTypeVxlan},
		&sb.Chassis{UUID: "c1", Name: "node-1", Encaps: []string{"e1"}},
		&sb.Chassis{UUID: "c2", Name: "node-2", Encaps: []string{"e2"}},
		&sb.Chassis{UUID: "c3", Name: "node-3", Encaps: []string{"e3"}})
	s := ovs.NewSouthbound(endpoint)
	defer s.Close()
	ctx := context.Background()
	encaps, err := s.GeneveEncaps(ctx)
	if err != nil || len(encaps) != 2 {
		t.Fatalf("geneve encaps %+v, %v", encaps, err)
	}
	if n, err := s.SetEncapPort(ctx, 6082, nil); err != nil || n != 2 {
		t.Fatalf("set port: %d, %v", n, err)
	}
	encaps, _ = s.GeneveEncaps(ctx)
	for _, e := range encaps {
		if e.DstPort != 6082 {
			t.Errorf("encap of %s: port %d, want 6082", e.Chassis, e.DstPort)
		}
	}

	bad := ovsmem.StartSouthbound(t)
	ovsmem.Insert(t, bad, full, &sb.Encap{UUID: "e9", ChassisName: "node-9", IP: "198.19.0.9", Type: sb.EncapTypeGeneve, Options: map[string]string{"dst_port": "x"}},
		&sb.Chassis{UUID: "c9", Name: "node-9", Encaps: []string{"e9"}})
	b := ovs.NewSouthbound(bad)
	defer b.Close()
	if _, err := b.GeneveEncaps(ctx); err == nil || !strings.Contains(err.Error(), `chassis node-9: options:dst_port "x"`) {
		t.Errorf("a record with a bad port: %v", err)
	}
}
