package ovs_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
)

func TestPodPortsAreTheIntegrationAndPerPortBridgesPorts(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	sw.Vsctl("add-port", "br-int", "vethpod1", "--", "set", "interface", "vethpod1", "type=internal")
	sw.Vsctl("add-br", "br-ex", "--", "set", "bridge", "br-ex", "datapath_type=netdev", "--", "add-port", "br-ex", "uplink0")
	if err := sw.DB.Plug(ctx, plug.PerPort, vmPort(portID), "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	got, err := sw.DB.PodPorts(ctx, "br-int")
	if err != nil {
		t.Fatal(err)
	}
	n := plug.NamesFor(portID)
	want := map[string]ovs.PodPort{"br-int": {"br-int", "internal"}, "vethpod1": {"br-int", "internal"}, n.IntegrationPatch: {"br-int", "patch"},
		n.Bridge: {n.Bridge, "internal"}, n.BridgePatch: {n.Bridge, "patch"}, vmPort(portID).Tap: {n.Bridge, ""}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PodPorts = %v\nwant %v (nothing of br-ex)", got, want)
	}
}

func TestIfaceIDsAreTheBoundInterfaces(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	sw.Vsctl("add-port", "br-int", "vethpod1", "--", "set", "interface", "vethpod1", "type=internal", "external_ids:iface-id=lab_web-1")
	sw.Vsctl("add-port", "br-int", "vethbare", "--", "set", "interface", "vethbare", "type=internal")
	if err := sw.DB.Plug(ctx, plug.PerPort, vmPort(portID), "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"lab_web-1": "vethpod1", portID: plug.NamesFor(portID).IntegrationPatch}
	var got map[string]string
	// The switch's cache follows the database a moment later.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if got, err = sw.DB.IfaceIDs(ctx); err != nil {
			t.Fatal(err)
		}
		if reflect.DeepEqual(got, want) {
			break
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("IfaceIDs = %v, want %v (no bare interface)", got, want)
	}
	sw.Vsctl("del-port", "br-int", "vethpod1")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got, _ = sw.DB.IfaceIDs(ctx); got["lab_web-1"] == "" {
			return
		}
	}
	t.Fatalf("IfaceIDs after the port's deletion = %v", got)
}
