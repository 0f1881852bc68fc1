package ovs_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
)

const portID = "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9012"

func vmPort(id string) plug.Port {
	return plug.Port{ID: id, MAC: "0a:58:c6:12:fa:0a", VMUUID: "vm-" + id[:4]}.WithDefaults("")
}

// addTap creates the VM's tap (a veth end) in the switch's namespace: the
// device appearing when the VM resumes.
func addTap(t *testing.T, sw *ovstest.Switch, name string) {
	t.Helper()
	sw.Run("ip", "-n", sw.Netns, "link", "add", name, "type", "veth", "peer", "name", "vm-"+name[:min(len(name), 10)])
	sw.Run("ip", "-n", sw.Netns, "link", "set", name, "up")
}

func ofport(t *testing.T, sw *ovstest.Switch, iface string) string {
	t.Helper()
	return sw.Vsctl("get", "interface", iface, "ofport")
}

// waitOFPort waits until vswitchd has attached the interface.
func waitOFPort(t *testing.T, sw *ovstest.Switch, iface string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := ofport(t, sw, iface)
		if p != "-1" && p != "[]" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got an ofport (%s)", iface, p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPerPortPlug(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	p := vmPort(portID)
	n := plug.NamesFor(portID)
	before := len(sw.Transactions())
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/vm-1", true, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}

	// ONE transaction created all of it.
	txns := sw.Transactions()
	var ours []string
	for _, rec := range txns[before:] {
		if strings.Contains(rec, n.Bridge) || strings.Contains(rec, n.IntegrationPatch) || strings.Contains(rec, p.Tap) {
			if strings.Contains(rec, "insert") {
				ours = append(ours, rec)
			}
		}
	}
	if len(ours) != 1 {
		t.Fatalf("the plug inserted its rows in %d transactions, want 1:\n%s", len(ours), strings.Join(ours, "\n---\n"))
	}
	for _, name := range []string{n.Bridge, n.BridgePatch, n.IntegrationPatch, p.Tap} {
		if !strings.Contains(ours[0], name) {
			t.Errorf("the plug's transaction does not create %s", name)
		}
	}

	// The names, the bridge's datapath type and its one NORMAL flow.
	if got := sw.Vsctl("port-to-br", n.IntegrationPatch); got != "br-int" {
		t.Errorf("%s is on %s, want br-int", n.IntegrationPatch, got)
	}
	if got := sw.Vsctl("list-ports", n.Bridge); got != n.BridgePatch+"\n"+p.Tap && got != p.Tap+"\n"+n.BridgePatch {
		t.Errorf("ports of %s: %q, want %s and %s", n.Bridge, got, n.BridgePatch, p.Tap)
	}
	if got := sw.Vsctl("get", "bridge", n.Bridge, "datapath_type"); got != "netdev" {
		t.Errorf("%s datapath_type %s, want the integration bridge's netdev", n.Bridge, got)
	}
	if flows := sw.Flows(n.Bridge); len(flows) != 1 || !strings.HasSuffix(flows[0], "actions=NORMAL") {
		t.Errorf("flows of %s: %q, want one NORMAL flow", n.Bridge, flows)
	}
	// The integration side carries the identity the network controller binds by.
	for key, want := range map[string]string{"iface-id": portID, "iface-status": "active", "attached-mac": p.MAC, "vm-uuid": p.VMUUID} {
		if got := strings.Trim(sw.Vsctl("get", "interface", n.IntegrationPatch, "external_ids:"+key), `"`); got != want {
			t.Errorf("%s external_ids:%s = %q, want %q", n.IntegrationPatch, key, got, want)
		}
	}
	if got := sw.Vsctl("get", "interface", n.IntegrationPatch, "options:peer"); strings.Trim(got, `"`) != n.BridgePatch {
		t.Errorf("%s peer %s", n.IntegrationPatch, got)
	}
	if got := sw.Vsctl("get", "port", n.BridgePatch, "tag"); got != fmt.Sprint(ovs.DeadVLAN) {
		t.Errorf("isolated port: %s tag %s, want 4095", n.BridgePatch, got)
	}

	// The patch port is attached before the tap exists; the tap when it appears.
	waitOFPort(t, sw, n.IntegrationPatch)
	if got := ofport(t, sw, p.Tap); got != "-1" && got != "[]" {
		t.Errorf("tap has ofport %s before its device exists", got)
	}
	addTap(t, sw, p.Tap)
	waitOFPort(t, sw, p.Tap)

	plugged, err := sw.DB.Plugged(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := plug.Plugged{PortID: portID, Mode: plug.PerPort, Owner: "vms/vm-1", Tap: p.Tap, Bridge: n.Bridge, Isolated: true}
	if len(plugged) != 1 || plugged[0] != want {
		t.Fatalf("plugged = %+v, want %+v", plugged, want)
	}

	// Activation clears the dead VLAN; plugging again (an agent restart) neither
	// isolates it again nor changes anything else.
	if err := sw.DB.Activate(ctx, portID); err != nil {
		t.Fatal(err)
	}
	if got := sw.Vsctl("get", "port", n.BridgePatch, "tag"); got != "[]" {
		t.Errorf("after activation %s tag %s", n.BridgePatch, got)
	}
	snapshot := sw.Vsctl("--columns=name,external_ids,options", "list", "interface")
	ofports := ofport(t, sw, n.IntegrationPatch) + "/" + ofport(t, sw, p.Tap)
	adm, err := plug.Admit(plug.PerPort, plugged, plug.Port{ID: portID, MAC: p.MAC, VMUUID: p.VMUUID, Tap: p.Tap, Isolate: true}, "vms/vm-1")
	if err != nil || adm.Isolate {
		t.Fatalf("admission of the same plug: %+v %v", adm, err)
	}
	for i := 0; i < 2; i++ {
		if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/vm-1", adm.Isolate, "br-int", "netdev"); err != nil {
			t.Fatal(err)
		}
	}
	if got := sw.Vsctl("--columns=name,external_ids,options", "list", "interface"); got != snapshot {
		t.Errorf("plugging again changed the interfaces:\n%s\nwas\n%s", got, snapshot)
	}
	if got := ofport(t, sw, n.IntegrationPatch) + "/" + ofport(t, sw, p.Tap); got != ofports {
		t.Errorf("plugging again changed the ofports: %s, were %s", got, ofports)
	}
	if got := sw.Vsctl("get", "port", n.BridgePatch, "tag"); got != "[]" {
		t.Errorf("plugging again isolated an active port: tag %s", got)
	}
}

func TestUnplugRemovesOnlyWhatPlugCreated(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	// Someone else's port on br-int and a bridge of their own stay.
	sw.Vsctl("add-port", "br-int", "other0", "--", "set", "interface", "other0", "type=internal",
		"--", "add-br", "br-ex", "--", "set", "bridge", "br-ex", "datapath_type=netdev")
	before := sw.Vsctl("--columns=name", "list", "interface")
	bridges := sw.Vsctl("list-br")
	a, b := vmPort(portID), vmPort("9a8b7c6d-0000-4000-8000-000000000001")
	if err := sw.DB.Plug(ctx, plug.PerPort, a, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	if err := sw.DB.Plug(ctx, plug.PerPort, b, "vms/b", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	plugged, _ := sw.DB.Plugged(ctx)
	if len(plugged) != 2 {
		t.Fatalf("plugged %+v", plugged)
	}
	for _, pl := range plugged {
		for i := 0; i < 2; i++ { // idempotent
			if err := sw.DB.Unplug(ctx, pl, "br-int"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := sw.Vsctl("--columns=name", "list", "interface"); got != before {
		t.Errorf("interfaces after unplug:\n%s\nwant\n%s", got, before)
	}
	if got := sw.Vsctl("list-br"); got != bridges {
		t.Errorf("bridges after unplug: %q, want %q", got, bridges)
	}

	// Direct mode: the tap on br-int with the identity, and back.
	if err := sw.DB.Plug(ctx, plug.Direct, a, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Trim(sw.Vsctl("get", "interface", a.Tap, "external_ids:iface-id"), `"`); got != portID {
		t.Errorf("direct: tap iface-id %q", got)
	}
	if got := sw.Vsctl("port-to-br", a.Tap); got != "br-int" {
		t.Errorf("direct: tap on %s", got)
	}
	plugged, _ = sw.DB.Plugged(ctx)
	if len(plugged) != 1 || plugged[0].Mode != plug.Direct || plugged[0].Tap != a.Tap {
		t.Fatalf("direct plugged %+v", plugged)
	}
	if err := sw.DB.Unplug(ctx, plugged[0], "br-int"); err != nil {
		t.Fatal(err)
	}
	if got := sw.Vsctl("--columns=name", "list", "interface"); got != before {
		t.Errorf("interfaces after the direct unplug:\n%s\nwant\n%s", got, before)
	}
}

// The mode refusal is the admission's decision on what the real switch holds.
func TestRefuseMixingModes(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	a, b := vmPort(portID), vmPort("9a8b7c6d-0000-4000-8000-000000000001")
	if err := sw.DB.Plug(ctx, plug.Direct, a, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	plugged, err := sw.DB.Plugged(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := sw.Vsctl("show")
	_, err = plug.Admit(plug.PerPort, plugged, b, "vms/b")
	if !errors.Is(err, plug.ErrModeConflict) || !strings.Contains(err.Error(), portID) {
		t.Fatalf("per-port plug next to a direct port: %v", err)
	}
	if got := sw.Vsctl("show"); got != before {
		t.Errorf("a refused plug changed the switch")
	}
	// With none plugged, the node may switch.
	if err := sw.DB.Unplug(ctx, plugged[0], "br-int"); err != nil {
		t.Fatal(err)
	}
	plugged, _ = sw.DB.Plugged(ctx)
	if _, err := plug.Admit(plug.PerPort, plugged, b, "vms/b"); err != nil {
		t.Fatalf("a node with nothing plugged may switch modes: %v", err)
	}
}

// After a restart of OVS (and of the agent), what was plugged is found again
// by its external_ids, and the stale ports are removed.
func TestCleanupAfterRestart(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	var ports []plug.Port
	for i := range 3 {
		p := vmPort(fmt.Sprintf("%08x-0000-4000-8000-00000000000%d", 0xabc0+i, i))
		ports = append(ports, p)
		if err := sw.DB.Plug(ctx, plug.PerPort, p, fmt.Sprintf("vms/vm-%d", i), false, "br-int", "netdev"); err != nil {
			t.Fatal(err)
		}
	}
	sw.Restart()
	plugged, err := sw.DB.Plugged(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(plugged) != 3 {
		t.Fatalf("after the restart %d plugged ports found, want 3", len(plugged))
	}
	// Only vm-1 still exists.
	stale := plug.Stale(plugged, map[string]string{"vms/vm-1": ports[1].ID})
	for _, pl := range stale {
		if err := sw.DB.Unplug(ctx, pl, "br-int"); err != nil {
			t.Fatal(err)
		}
	}
	plugged, _ = sw.DB.Plugged(ctx)
	if len(plugged) != 1 || plugged[0].PortID != ports[1].ID {
		t.Fatalf("after cleanup: %+v, want only %s", plugged, ports[1].ID)
	}
	want := "br-int\n" + plug.NamesFor(ports[1].ID).Bridge
	if got := sw.Vsctl("list-br"); got != want {
		t.Errorf("bridges after cleanup %q, want %q", got, want)
	}
	if out, _ := exec.Command("ip", "-n", sw.Netns, "link", "show", plug.NamesFor(ports[0].ID).Bridge).CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Errorf("a removed bridge's device is still there: %s", out)
	}
}

func TestInterfacesReadiness(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	p := vmPort(portID)
	n := plug.NamesFor(portID)
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	got, err := sw.DB.Interfaces(ctx, n.IntegrationPatch, p.Tap, "nope")
	if err != nil {
		t.Fatal(err)
	}
	if got[n.IntegrationPatch].OFPort <= 0 || got[p.Tap].OFPort != -1 {
		t.Errorf("before the tap exists: %+v", got)
	}
	if _, ok := got["nope"]; ok || len(got) != 2 {
		t.Errorf("interfaces %+v", got)
	}
	sw.Vsctl("set", "interface", n.IntegrationPatch, "external_ids:ovn-installed=true")
	got, _ = sw.DB.Interfaces(ctx, n.IntegrationPatch)
	if !got[n.IntegrationPatch].OVNInstalled {
		t.Errorf("ovn-installed not read: %+v", got)
	}
}

// The agent's announce of a migration target reaches the integration bridge
// through the patch pair, as the VM's own RARP would.
func TestAnnounceReachesTheIntegrationBridge(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	p := vmPort(portID)
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	// Count what br-int receives from the patch port.
	// (By number: OpenFlow port names stop at 15 bytes.)
	ifaces, err := sw.DB.Interfaces(ctx, "ipb-"+portID)
	if err != nil || ifaces["ipb-"+portID].OFPort <= 0 {
		t.Fatalf("ipb-%s: %+v %v", portID, ifaces, err)
	}
	sw.Run("ovs-ofctl", "add-flow", "br-int", fmt.Sprintf("priority=100,in_port=%d,dl_type=0x8035,actions=drop", ifaces["ipb-"+portID].OFPort))
	mac, _ := net.ParseMAC(p.MAC)
	if err := sw.DB.Announce(ctx, portID, mac); err != nil {
		t.Fatal(err)
	}
	waitFor := time.Now().Add(5 * time.Second)
	for {
		flows := strings.Join(sw.Flows("br-int"), "\n")
		stats := sw.Run("ovs-ofctl", "dump-flows", "br-int", "dl_type=0x8035")
		if strings.Contains(stats, "n_packets=1,") {
			break
		}
		if time.Now().After(waitFor) {
			t.Fatalf("the RARP never reached br-int from ipb-%s:\n%s\n%s", portID, stats, flows)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAHeldPortBridgeOpensWhenTheVMSpeaks: a migration target's port bridge,
// held for its VM, sends what comes from br-int to its own port (the agent's,
// package heldframes) while the incoming VM is not running, and passes it to
// the VM for good once a frame came from the VM's tap, which may appear
// after the hold.
// A migration target's port (Held) is plugged without its tap, which joins
// its bridge when attached; plugging it Held again (an agent restart) leaves
// an attached tap where it is, and the bridge stays a plain one.
func TestAHeldPortsTapJoinsWhenAttached(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	p := vmPort(portID)
	p.Held = true
	n := plug.NamesFor(portID)
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	addTap(t, sw, p.Tap)
	if ports := sw.Vsctl("list-ports", n.Bridge); ports != n.BridgePatch {
		t.Errorf("a held port's bridge has ports %q, want only %s", ports, n.BridgePatch)
	}
	if err := sw.DB.AttachTap(ctx, vmPort("4c1b2d3e-0000-4000-8000-0000000000ff")); err == nil || !strings.Contains(err.Error(), "no port bridge") {
		t.Errorf("attached the tap of a port that is not plugged: %v, want a refusal", err)
	}
	for range 2 { // attaching again repairs
		if err := sw.DB.AttachTap(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitOFPort(t, sw, p.Tap)
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	if got := sw.Vsctl("port-to-br", p.Tap); got != n.Bridge {
		t.Errorf("plugged Held again, the tap is on %q, want %s", got, n.Bridge)
	}
	if mode := sw.Vsctl("get-fail-mode", n.Bridge); mode != "" {
		t.Errorf("the port bridge's fail mode is %q: a restarted vswitchd would give it no NORMAL flow", mode)
	}
}

func TestAHeldPortBridgeOpensWhenTheVMSpeaks(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	p := vmPort(portID)
	n := plug.NamesFor(portID)
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	if err := sw.DB.HoldForVM(ctx, "4c1b2d3e-0000-4000-8000-0000000000ff"); err == nil || !strings.Contains(err.Error(), "is not on") {
		t.Errorf("held a port that is not plugged: %v, want a refusal", err)
	}
	// Held before the hypervisor makes the tap: the flows do not name it.
	if err := sw.DB.HoldForVM(ctx, portID); err != nil {
		t.Fatal(err)
	}
	addTap(t, sw, p.Tap)
	waitOFPort(t, sw, p.Tap)
	if err := sw.DB.HoldForVM(ctx, portID); err != nil { // again: the same flows
		t.Fatal(err)
	}
	ports, err := sw.DB.Interfaces(ctx, n.BridgePatch, p.Tap)
	if err != nil {
		t.Fatal(err)
	}
	patch, tap := ports[n.BridgePatch].OFPort, ports[p.Tap].OFPort
	frame := "ffffffffffff0a58c612fa148035000108000604000300000000000000000000000000000000000000000000000000000000000000000000"
	from := func(port int) {
		t.Helper()
		sw.Run("ovs-ofctl", "packet-out", n.Bridge, fmt.Sprintf("in_port=%d,packet=%s,actions=table", port, frame))
	}
	// flow is the bridge's flow (with its counters) whose match starts so.
	flow := func(match string) string {
		t.Helper()
		for _, f := range strings.Split(sw.Run("ovs-ofctl", "dump-flows", n.Bridge), "\n") {
			if strings.Contains(f, " "+match) {
				return f
			}
		}
		return ""
	}
	from(patch)
	if f := flow(fmt.Sprintf("priority=100,in_port=%d", patch)); !strings.Contains(f, "n_packets=1,") || !strings.HasSuffix(f, "actions=LOCAL") {
		t.Errorf("a frame from br-int before the VM spoke was not held: %q\n%s", f, strings.Join(sw.Flows(n.Bridge), "\n"))
	}
	from(tap)
	deadline := time.Now().Add(5 * time.Second)
	for flow("priority=150,") == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no flow learned from the VM's frame:\n%s", strings.Join(sw.Flows(n.Bridge), "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	from(patch)
	from(tap)
	learned := flow("priority=150,")
	if !strings.Contains(learned, fmt.Sprintf("in_port=%d", patch)) || !strings.Contains(learned, fmt.Sprintf("output:%d", tap)) ||
		!strings.Contains(learned, "n_packets=1,") {
		t.Errorf("after the VM spoke, a frame from br-int did not go to its tap: %q", learned)
	}
	if back := flow("priority=250,"); !strings.Contains(back, fmt.Sprintf("in_port=%d", tap)) || !strings.Contains(back, fmt.Sprintf("output:%d", patch)) ||
		!strings.Contains(back, "n_packets=1,") {
		t.Errorf("after the VM spoke, its next frame did not go to br-int: %q", back)
	}
}

// TestSubportPlug: a trunk subport's tap goes on the trunk bridge as an
// access port of its VLAN, with netshift's identity and no iface-id; Plugged
// reads it back with its bridge and VLAN; plugging again repairs a changed
// tag; Unplug removes it from the trunk bridge and nothing else.
func TestSubportPlug(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	sw.Vsctl("add-br", "br-trunk", "--", "set", "bridge", "br-trunk", "datapath_type=netdev")
	before := sw.Vsctl("--columns=name", "list", "interface")
	p := vmPort(portID)
	if err := sw.DB.PlugSubport(ctx, p, "pods/a", 0, "br-trunk"); err == nil || !strings.Contains(err.Error(), "VLAN 0: want 1..4094") {
		t.Errorf("VLAN 0: %v, want a refusal naming the range", err)
	}
	if err := sw.DB.PlugSubport(ctx, p, "pods/a", 101, "br-nope"); err == nil || !strings.Contains(err.Error(), "no trunk bridge br-nope") {
		t.Errorf("a missing trunk bridge: %v", err)
	}
	if got := sw.Vsctl("--columns=name", "list", "interface"); got != before {
		t.Fatalf("a refused plug changed the switch:\n%s", got)
	}
	if err := sw.DB.PlugSubport(ctx, p, "pods/a", 101, "br-trunk"); err != nil {
		t.Fatal(err)
	}
	if got := sw.Vsctl("port-to-br", p.Tap); got != "br-trunk" {
		t.Errorf("the subport's tap is on %s, want br-trunk", got)
	}
	if got := sw.Vsctl("get", "port", p.Tap, "tag"); got != "101" {
		t.Errorf("the subport's access VLAN is %s, want 101", got)
	}
	if got := sw.Vsctl("get", "interface", p.Tap, "external_ids"); strings.Contains(got, "iface-id") {
		t.Errorf("the subport's tap carries an iface-id (%s): the network binds it by parent and VLAN", got)
	}
	// Someone changed the tag: plugging again puts it back.
	sw.Vsctl("set", "port", p.Tap, "tag=7")
	if err := sw.DB.PlugSubport(ctx, p, "pods/a", 101, "br-trunk"); err != nil {
		t.Fatal(err)
	}
	if got := sw.Vsctl("get", "port", p.Tap, "tag"); got != "101" {
		t.Errorf("after a repair the access VLAN is %s, want 101", got)
	}
	plugged, err := sw.DB.Plugged(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := plug.Plugged{PortID: portID, Mode: plug.Subport, Owner: "pods/a", Tap: p.Tap, Bridge: "br-trunk", VLAN: 101}
	if len(plugged) != 1 || plugged[0] != want {
		t.Fatalf("plugged %+v, want %+v", plugged, want)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := sw.DB.Unplug(ctx, plugged[0], "br-int"); err != nil {
			t.Fatal(err)
		}
	}
	if got := sw.Vsctl("--columns=name", "list", "interface"); got != before {
		t.Errorf("interfaces after the unplug:\n%s\nwant\n%s", got, before)
	}
}
