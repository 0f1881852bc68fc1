package ovs_test

import (
	"context"
	"reflect"
	"testing"

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
