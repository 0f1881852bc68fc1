package ovsmem_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/model/vswitch"
	"netshift.io/netshift/internal/ovs/ovsmem"
	"netshift.io/netshift/internal/plug"
)

// contents is the whole switch, read by a client of its own: bridges with
// their ports' names, and every port and interface by name.
type contents struct {
	bridges map[string][]string
	ports   map[string]vswitch.Port
	ifaces  map[string]vswitch.Interface
}

func read(t *testing.T, endpoint string) contents {
	t.Helper()
	full, _ := vswitch.FullDatabaseModel()
	c := ovsmem.Client(t, endpoint, full)
	defer c.Close() // several reads per test: each its own client, gone at once
	ctx := context.Background()
	if _, err := c.MonitorAll(ctx); err != nil {
		t.Fatal(err)
	}
	var bs []vswitch.Bridge
	var ps []vswitch.Port
	var is []vswitch.Interface
	for _, l := range []any{&bs, &ps, &is} {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	out := contents{bridges: map[string][]string{}, ports: map[string]vswitch.Port{}, ifaces: map[string]vswitch.Interface{}}
	portName := map[string]string{}
	for _, p := range ps {
		out.ports[p.Name] = p
		portName[p.UUID] = p.Name
	}
	for _, b := range bs {
		for _, u := range b.Ports {
			out.bridges[b.Name] = append(out.bridges[b.Name], portName[u])
		}
		slices.Sort(out.bridges[b.Name])
	}
	for _, i := range is {
		out.ifaces[i.Name] = i
	}
	return out
}

func open(t *testing.T) (*ovs.Switch, string) {
	t.Helper()
	endpoint := ovsmem.StartSwitch(t)
	sw, err := ovs.OpenSwitch(context.Background(), endpoint, ovs.NoWait())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	return sw, endpoint
}

// A per-port plug builds the port's bridge, the patch pair and the tap in one
// transaction; plugging again changes nothing; activation lifts the
// isolation; unplugging leaves the switch exactly as it was.
func TestPerPortPlugInOneTransaction(t *testing.T) {
	sw, endpoint := open(t)
	ctx := context.Background()
	before := read(t, endpoint)
	p := plug.Port{ID: "7c1d0e2f-1111-4000-8000-00000000000a", MAC: "0a:58:c6:12:fa:0a", Tap: "tapvma", VMUUID: "vm-a"}
	n := plug.NamesFor(p.ID)
	if err := sw.Plug(ctx, plug.PerPort, p, "vms/vm-a", true, "br-int", "system"); err != nil {
		t.Fatal(err)
	}
	got := read(t, endpoint)
	if want := []string{n.BridgePatch, n.Bridge, "tapvma"}; !slices.Equal(got.bridges[n.Bridge], want) {
		t.Errorf("port bridge %s has ports %v, want %v", n.Bridge, got.bridges[n.Bridge], want)
	}
	if !slices.Contains(got.bridges["br-int"], n.IntegrationPatch) {
		t.Errorf("br-int has ports %v, want %s among them", got.bridges["br-int"], n.IntegrationPatch)
	}
	ipb := got.ifaces[n.IntegrationPatch]
	if ipb.Type != "patch" || ipb.Options["peer"] != n.BridgePatch || ipb.ExternalIDs["iface-id"] != p.ID ||
		ipb.ExternalIDs["attached-mac"] != p.MAC || ipb.ExternalIDs["vm-uuid"] != "vm-a" {
		t.Errorf("%s: %+v", n.IntegrationPatch, ipb)
	}
	if pbp := got.ports[n.BridgePatch]; pbp.Tag == nil || *pbp.Tag != ovs.DeadVLAN {
		t.Errorf("%s is not isolated: tag %v", n.BridgePatch, pbp.Tag)
	}
	if br := got.ifaces[n.Bridge]; br.Type != "internal" {
		t.Errorf("the port bridge's own interface has type %q", br.Type)
	}
	plugged, err := sw.Plugged(ctx)
	if err != nil || len(plugged) != 1 || plugged[0].PortID != p.ID || plugged[0].Owner != "vms/vm-a" || !plugged[0].Isolated || plugged[0].Tap != "tapvma" {
		t.Errorf("plugged: %+v, %v", plugged, err)
	}

	// Again (an agent restarted): nothing added, the isolation not applied twice.
	if err := sw.Plug(ctx, plug.PerPort, p, "vms/vm-a", false, "br-int", "system"); err != nil {
		t.Fatal(err)
	}
	if again := read(t, endpoint); len(again.ports) != len(got.ports) || len(again.ifaces) != len(got.ifaces) {
		t.Errorf("plugging again added rows: %d ports, %d interfaces, was %d, %d", len(again.ports), len(again.ifaces), len(got.ports), len(got.ifaces))
	}

	if err := sw.Activate(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if tag := read(t, endpoint).ports[n.BridgePatch].Tag; tag != nil {
		t.Errorf("activated, %s still has tag %d", n.BridgePatch, *tag)
	}
	if plugged, _ := sw.Plugged(ctx); len(plugged) != 1 || plugged[0].Isolated {
		t.Errorf("plugged after activation: %+v", plugged)
	}

	if err := sw.Unplug(ctx, plugged[0], "br-int"); err != nil {
		t.Fatal(err)
	}
	after := read(t, endpoint)
	if len(after.bridges) != len(before.bridges) || len(after.ports) != len(before.ports) || len(after.ifaces) != len(before.ifaces) {
		t.Errorf("after unplug: bridges %v, %d ports, %d interfaces; before: %v, %d, %d",
			after.bridges, len(after.ports), len(after.ifaces), before.bridges, len(before.ports), len(before.ifaces))
	}
	if plugged, _ := sw.Plugged(ctx); len(plugged) != 0 {
		t.Errorf("plugged after unplug: %+v", plugged)
	}
	// Unplugging what is gone is no error.
	if err := sw.Unplug(ctx, plugged[0], "br-int"); err != nil {
		t.Errorf("unplug again: %v", err)
	}
}

// A direct plug puts the tap on the integration bridge with its identity; the
// tap's name is then in use for another port.
func TestDirectPlug(t *testing.T) {
	sw, endpoint := open(t)
	ctx := context.Background()
	p := plug.Port{ID: "7c1d0e2f-2222-4000-8000-00000000000b", MAC: "0a:58:c6:12:fa:0b", Tap: "tapvmb"}
	if err := sw.Plug(ctx, plug.Direct, p, "vms/vm-b", false, "br-int", "system"); err != nil {
		t.Fatal(err)
	}
	got := read(t, endpoint)
	if !slices.Contains(got.bridges["br-int"], "tapvmb") || got.ifaces["tapvmb"].ExternalIDs["iface-id"] != p.ID {
		t.Errorf("br-int %v, tap %+v", got.bridges["br-int"], got.ifaces["tapvmb"])
	}
	used, err := sw.TapInUse(ctx, "tapvmb")
	if err != nil || !used.InSwitch || used.PortID != p.ID {
		t.Errorf("tap in use: %+v, %v", used, err)
	}
	if used, _ := sw.TapInUse(ctx, "br-int"); !used.InSwitch || used.Type != "internal" || used.PortID != "" {
		t.Errorf("br-int in use: %+v", used)
	}
	if used, _ := sw.TapInUse(ctx, "nothing"); used.InSwitch {
		t.Errorf("a name the switch does not have: %+v", used)
	}
	ports, err := sw.PodPorts(ctx, "br-int")
	if err != nil || ports["tapvmb"].Bridge != "br-int" {
		t.Errorf("pod ports %v, %v", ports, err)
	}
	plugged, _ := sw.Plugged(ctx)
	if len(plugged) != 1 || plugged[0].Mode != plug.Direct {
		t.Fatalf("plugged %+v", plugged)
	}
	if err := sw.Unplug(ctx, plugged[0], "br-int"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, endpoint); slices.Contains(got.bridges["br-int"], "tapvmb") || len(got.ifaces) != 1 {
		t.Errorf("after unplug: br-int %v, interfaces %d", got.bridges["br-int"], len(got.ifaces))
	}
}

// A tunnel port change rewrites options:dst_port of the tunnels of its type
// alone, keeping their other options, in one prepared transaction; the
// MTU request goes on the named interfaces.
func TestPreparedTunnelPortKeepsOtherOptions(t *testing.T) {
	sw, endpoint := open(t)
	ctx := context.Background()
	full, _ := vswitch.FullDatabaseModel()
	c := ovsmem.Client(t, endpoint, full)
	var ops []ovsdb.Operation
	var ports []string
	for i, tun := range []vswitch.Interface{
		{Name: "tun2", Type: "vxlan", Options: map[string]string{"remote_ip": "198.19.0.2", "key": "flow"}},
		{Name: "tun3", Type: "vxlan", Options: map[string]string{"remote_ip": "198.19.0.3", "dst_port": "4789"}},
		{Name: "gen2", Type: "geneve", Options: map[string]string{"remote_ip": "198.19.0.2"}},
	} {
		tun.UUID = "i" + string(rune('a'+i))
		p := vswitch.Port{UUID: "p" + string(rune('a'+i)), Name: tun.Name, Interfaces: []string{tun.UUID}}
		o, err := c.Create(&tun, &p)
		if err != nil {
			t.Fatal(err)
		}
		ops, ports = append(ops, o...), append(ports, p.UUID)
	}
	br := vswitch.Bridge{Name: "br-int"}
	o, err := c.Where(&br).Mutate(&br, model.Mutation{Field: &br.Ports, Mutator: ovsdb.MutateOperationInsert, Value: ports})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Transact(ctx, append(ops, o...)...); err != nil || res[len(res)-1].Error != "" {
		t.Fatalf("add tunnels: %v %+v", err, res)
	}
	// The switch's monitor brings the new tunnels into its cache a moment later.
	var tunnels []ovs.Tunnel
	for deadline := time.Now().Add(5 * time.Second); len(tunnels) < 3 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tunnels, _ = sw.Tunnels(ctx)
	}
	// Armed and released without a commit: nothing changes, and its
	// connection is closed.
	fds := openFDs(t)
	withdrawn, err := sw.PrepareTunnelPort(ctx, "vxlan", 4791)
	if err != nil {
		t.Fatal(err)
	}
	if err := withdrawn.Arm(ctx); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n <= fds {
		t.Errorf("armed: %d open files, want more than %d (its own connection)", n, fds)
	}
	withdrawn.Release()
	backTo(t, "released", fds)
	if got := read(t, endpoint).ifaces["tun3"].Options["dst_port"]; got != "4789" {
		t.Errorf("a released transaction changed tun3's dst_port to %s", got)
	}
	// Armed, then committed over its own connection, which the commit closes.
	prepared, err := sw.PrepareTunnelPort(ctx, "vxlan", 4790)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(prepared.Names, []string{"tun2", "tun3"}) {
		t.Errorf("prepared for %v, want the vxlan tunnels tun2 and tun3 (cache had %v)", prepared.Names, tunnels)
	}
	if err := prepared.Arm(ctx); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := prepared.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if prepared.Committed.Before(before) || prepared.Committed.After(time.Now()) {
		t.Errorf("committed at %v, not during the commit", prepared.Committed)
	}
	backTo(t, "committed", fds)
	got := read(t, endpoint)
	for name, want := range map[string]map[string]string{
		"tun2": {"remote_ip": "198.19.0.2", "key": "flow", "dst_port": "4790"},
		"tun3": {"remote_ip": "198.19.0.3", "dst_port": "4790"},
		"gen2": {"remote_ip": "198.19.0.2"},
	} {
		if have := got.ifaces[name].Options; !equalMaps(have, want) {
			t.Errorf("%s options %v, want %v", name, have, want)
		}
	}
	if err := sw.SetMTURequest(ctx, 1400, "br-int"); err != nil {
		t.Fatal(err)
	}
	if m := read(t, endpoint).ifaces["br-int"].MTURequest; m == nil || *m != 1400 {
		t.Errorf("br-int mtu_request %v, want 1400", m)
	}
	if id, err := sw.OpenvSwitchExternalID(ctx, "system-id"); err != nil || id != "node-1" {
		t.Errorf("system-id %q, %v", id, err)
	}
	if err := sw.Reachable(ctx); err != nil {
		t.Error(err)
	}
}

// A plug onto a switch without the integration bridge changes nothing and says why.
func TestPlugWithoutIntegrationBridge(t *testing.T) {
	sw, endpoint := open(t)
	before := read(t, endpoint)
	err := sw.Plug(context.Background(), plug.PerPort, plug.Port{ID: "p1", MAC: "0a:58:c6:12:fa:01", Tap: "tapp1"}, "vms/a", false, "br-nope", "system")
	if err == nil || !strings.Contains(err.Error(), "no integration bridge br-nope") {
		t.Errorf("plug into a missing bridge: %v", err)
	}
	if after := read(t, endpoint); len(after.ports) != len(before.ports) {
		t.Errorf("a refused plug changed the switch")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// backTo waits until the process has fds open files again: the in-memory
// server shares the process, and closes its side of a connection once it
// reads the end of it.
func backTo(t *testing.T, what string, fds int) {
	t.Helper()
	n := openFDs(t)
	for deadline := time.Now().Add(5 * time.Second); n != fds && time.Now().Before(deadline); n = openFDs(t) {
		time.Sleep(5 * time.Millisecond)
	}
	if n != fds {
		t.Errorf("%s: %d open files, want %d", what, n, fds)
	}
}

// openFDs counts the test process's open files.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
