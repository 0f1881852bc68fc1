package plug

import (
	"encoding/hex"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

const uuid1 = "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9012"

func TestNamesFitTheInterfaceLimit(t *testing.T) {
	for _, id := range []string{uuid1, "a", "port-with-a-rather-long-name-0123456789", "ab-cd"} {
		n := NamesFor(id)
		if len(n.Bridge) > 15 {
			t.Errorf("%s: bridge %q is %d bytes, over the 15-byte interface limit", id, n.Bridge, len(n.Bridge))
		}
		if n != NamesFor(id) {
			t.Errorf("%s: names are not deterministic", id)
		}
		if n.BridgePatch != "pbp-"+id || n.IntegrationPatch != "ipb-"+id {
			t.Errorf("%s: patch ports %q/%q do not carry the whole id", id, n.BridgePatch, n.IntegrationPatch)
		}
	}
	if got := NamesFor(uuid1).Bridge; got != "pbr-3f2a9c1e7b4" {
		t.Errorf("bridge of %s = %q, want pbr-3f2a9c1e7b4 (dashes skipped)", uuid1, got)
	}
	if got := DefaultTap(uuid1); got != "tap3f2a9c1e7b4" || len(got) > 15 {
		t.Errorf("default tap %q", got)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	good := Port{ID: uuid1, MAC: "0a:58:c6:12:fa:0a"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		p     Port
	}{
		{"port id", Port{ID: "", MAC: good.MAC}},
		{"mac", Port{ID: uuid1, MAC: "0a:58:c6"}},
		{"mac", Port{ID: uuid1, MAC: "01:00:5e:00:00:01"}}, // multicast
		{"mac", Port{ID: uuid1, MAC: "00:00:00:00:00:00"}},
		{"mac", Port{ID: uuid1, MAC: "0a-58-c6-12-fa-0a"}}, // dash form: OVN reads colons only
		{"tap", Port{ID: uuid1, MAC: good.MAC, Tap: "a-tap-name-too-long"}},
		{"tap", Port{ID: uuid1, MAC: good.MAC, Tap: "tapbvictim1"}}, // another port's tap, named before it exists
		{"tap", Port{ID: uuid1, MAC: good.MAC, Tap: "br-int"}},
		{"vmUUID", Port{ID: uuid1, MAC: good.MAC, VMUUID: `a"b`}},
		{"vmUUID", Port{ID: uuid1, MAC: good.MAC, VMUUID: strings.Repeat("v", 65)}},
	} {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s %+v: error %v does not name the field", c.field, c.p, err)
		}
	}
	if _, err := ParseMode("--plug-mode", "bridged"); err == nil || !strings.Contains(err.Error(), "per-port, direct") {
		t.Errorf("ParseMode: %v", err)
	}
}

func TestAdmit(t *testing.T) {
	p := Port{ID: uuid1, MAC: "0a:58:c6:12:fa:0a", Isolate: true}.WithDefaults("vm")
	samePrefix := "3f2a9c1e-7b4d-ffff-ffff-000000000000" // the same first 11 characters
	cases := []struct {
		name    string
		mode    Mode
		plugged []Plugged
		owner   string
		wantErr error
		isolate bool
		// existing: the admission repairs the port's plug; discard: it unplugs a parked one first.
		existing, discard bool
	}{
		{name: "empty node", mode: PerPort, owner: "vm/a", isolate: true},
		{name: "again, activated: repair only", mode: PerPort, owner: "vm/a",
			plugged: []Plugged{{PortID: uuid1, Mode: PerPort, Owner: "vm/a", Tap: p.Tap, Bridge: NamesFor(uuid1).Bridge}}},
		{name: "other ports of the same mode", mode: Direct, owner: "vm/a", isolate: true,
			plugged: []Plugged{{PortID: "x", Mode: Direct, Owner: "vm/x", Tap: "tapx"}}},
		{name: "mixing refused", mode: PerPort, owner: "vm/a", wantErr: ErrModeConflict,
			plugged: []Plugged{{PortID: "x", Mode: Direct, Owner: "vm/x", Tap: "tapx"}}},
		{name: "own earlier plug in the other mode", mode: Direct, owner: "vm/a", wantErr: ErrModeConflict,
			plugged: []Plugged{{PortID: uuid1, Mode: PerPort, Owner: "vm/a", Tap: p.Tap, Bridge: NamesFor(uuid1).Bridge}}},
		{name: "bridge name of another port", mode: PerPort, owner: "vm/a", wantErr: ErrNameTaken,
			plugged: []Plugged{{PortID: samePrefix, Mode: PerPort, Owner: "vm/b", Tap: "tapb", Bridge: NamesFor(samePrefix).Bridge}}},
		{name: "tap of another port", mode: Direct, owner: "vm/a", wantErr: ErrNameTaken,
			plugged: []Plugged{{PortID: "y", Mode: Direct, Owner: "vm/y", Tap: p.Tap}}},
		{name: "same port for a second pod", mode: PerPort, owner: "vm/other", wantErr: ErrNameTaken,
			plugged: []Plugged{{PortID: uuid1, Mode: PerPort, Owner: "vm/a", Tap: p.Tap, Bridge: NamesFor(uuid1).Bridge}}},
		{name: "a subport beside the integration bridge's ports", mode: Subport, owner: "vm/a", isolate: true,
			plugged: []Plugged{{PortID: "x", Mode: Direct, Owner: "vm/x", Tap: "tapx"}, {PortID: "z", Mode: Subport, Owner: "vm/z", Tap: "tapz", Bridge: "br-trunk", VLAN: 7}}},
		{name: "a port beside subports", mode: PerPort, owner: "vm/a", isolate: true,
			plugged: []Plugged{{PortID: "z", Mode: Subport, Owner: "vm/z", Tap: "tapz", Bridge: "br-trunk", VLAN: 7}}},
		{name: "a subport whose tap another subport has", mode: Subport, owner: "vm/a", wantErr: ErrNameTaken,
			plugged: []Plugged{{PortID: "z", Mode: Subport, Owner: "vm/z", Tap: p.Tap, Bridge: "br-trunk", VLAN: 7}}},
		{name: "the port's parked device: adopted as it is", mode: PerPort, owner: "vm/a", existing: true,
			plugged: []Plugged{{PortID: uuid1, Mode: PerPort, Tap: p.Tap, Bridge: NamesFor(uuid1).Bridge, ParkedAt: time.Unix(1, 0)}}},
		{name: "the port's parked device of the other mode: discarded, plugged anew", mode: Direct, owner: "vm/a", isolate: true, discard: true,
			plugged: []Plugged{{PortID: uuid1, Mode: PerPort, Tap: p.Tap, Bridge: NamesFor(uuid1).Bridge, ParkedAt: time.Unix(1, 0)}}},
		{name: "other ports parked the other way do not block", mode: PerPort, owner: "vm/a", isolate: true,
			plugged: []Plugged{{PortID: "x", Mode: Direct, Tap: "tapx", ParkedAt: time.Unix(1, 0)}}},
	}
	for _, c := range cases {
		adm, err := Admit(c.mode, c.plugged, p, c.owner)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), uuid1) {
				t.Errorf("%s: error %q does not name the port", c.name, err)
			}
			continue
		}
		if adm.Isolate != c.isolate {
			t.Errorf("%s: isolate %v, want %v", c.name, adm.Isolate, c.isolate)
		}
		if (adm.Existing != nil) != (c.existing || c.name == "again, activated: repair only") || (adm.Discard != nil) != c.discard {
			t.Errorf("%s: existing %+v, discard %+v; want existing %v, discard %v", c.name, adm.Existing, adm.Discard, c.existing, c.discard)
		}
	}
	_, err := Admit(PerPort, []Plugged{{PortID: "x", Mode: Direct, Owner: "vm/x", Tap: "tapx"}, {PortID: "w", Mode: Direct, Owner: "vm/w", Tap: "tapw"}}, p, "vm/a")
	if err == nil || !strings.Contains(err.Error(), "2 port(s) are plugged the other way (w, x)") {
		t.Errorf("the conflict does not list the ports in the way: %v", err)
	}
}

func TestStale(t *testing.T) {
	plugged := []Plugged{{PortID: "a", Owner: "ns/a"}, {PortID: "b", Owner: "ns/b"}, {PortID: "c", Owner: "ns/c"}}
	got := Stale(plugged, map[string]string{"ns/a": "a", "ns/c": "c2"})
	if len(got) != 2 || got[0].PortID != "b" || got[1].PortID != "c" {
		t.Errorf("stale = %+v, want b (pod gone) and c (pod has another port now)", got)
	}
}

func TestLogicalPortOptions(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	src := Binding{Pod: "vm/a", Node: "node-1", Created: t0}
	dst := Binding{Pod: "vm/a-target", Node: "node-2", Created: t0.Add(time.Second)}
	cases := []struct {
		name     string
		current  map[string]string
		bindings []Binding
		set      map[string]string
		remove   []string
	}{
		{name: "no pod: leave it", current: map[string]string{"requested-chassis": "node-1"}},
		{name: "one pod", bindings: []Binding{src}, set: map[string]string{"requested-chassis": "node-1"}},
		{name: "one pod, already so", current: map[string]string{"requested-chassis": "node-1"}, bindings: []Binding{src}},
		{name: "migrating: source first whatever the list order", current: map[string]string{"requested-chassis": "node-1"},
			bindings: []Binding{dst, src}, set: map[string]string{"requested-chassis": "node-1,node-2", "activation-strategy": "rarp"}},
		{name: "migrating, already so", current: map[string]string{"requested-chassis": "node-1,node-2", "activation-strategy": "rarp"},
			bindings: []Binding{src, dst}},
		{name: "migration over: target alone, strategy removed",
			current:  map[string]string{"requested-chassis": "node-1,node-2", "activation-strategy": "rarp", "other": "kept"},
			bindings: []Binding{dst}, set: map[string]string{"requested-chassis": "node-2"}, remove: []string{"activation-strategy"}},
		{name: "the marked target goes second even when created in the same second",
			bindings: []Binding{{Pod: "vm/a", Node: "node-2", Created: t0, Target: true}, {Pod: "vm/z", Node: "node-1", Created: t0}},
			set:      map[string]string{"requested-chassis": "node-1,node-2", "activation-strategy": "rarp"}},
		{name: "unscheduled pod ignored", bindings: []Binding{src, {Pod: "vm/b", Created: t0}}, set: map[string]string{"requested-chassis": "node-1"}},
	}
	for _, c := range cases {
		set, remove := LogicalPortOptions(c.current, c.bindings)
		if !reflect.DeepEqual(set, c.set) || !reflect.DeepEqual(remove, c.remove) {
			t.Errorf("%s: set %v remove %v, want %v %v", c.name, set, remove, c.set, c.remove)
		}
	}
}

func TestPortOf(t *testing.T) {
	p, ok, err := PortOf(map[string]string{PoolAnnotation: `{"id":"` + uuid1 + `","mac":"0a:58:c6:12:fa:0a","pool":"x"}`}, "uid-1")
	if err != nil || !ok || p.Tap != DefaultTap(uuid1) || p.VMUUID != "uid-1" || p.MAC != "0a:58:c6:12:fa:0a" {
		t.Errorf("from the pool's annotation: %+v %v %v", p, ok, err)
	}
	p, ok, err = PortOf(map[string]string{PoolAnnotation: `{"id":"other"}`,
		PortSpecAnnotation: `{"id":"` + uuid1 + `","mac":"0a:58:c6:12:fa:0b","tap":"tap3f2a9c1e7b4","vmUUID":"vm-7","isolate":true}`}, "uid-1")
	if err != nil || !ok || p.Tap != DefaultTap(uuid1) || p.VMUUID != "vm-7" || !p.Isolate || p.ID != uuid1 {
		t.Errorf("the spec goes first: %+v %v %v", p, ok, err)
	}
	// A trunk's subport is netshift-cni's to plug, on the trunk bridge.
	if _, ok, err := PortOf(map[string]string{PoolAnnotation: `{"id":"` + uuid1 + `","mac":"0a:58:c6:12:fa:0a","segmentationID":101}`}, "u"); ok || err != nil {
		t.Errorf("a subport: %v %v, want nothing to plug", ok, err)
	}
	if _, ok, err := PortOf(map[string]string{}, "u"); ok || err != nil {
		t.Errorf("no annotation: %v %v", ok, err)
	}
	if _, ok, err := PortOf(map[string]string{PortSpecAnnotation: `{"id":"x","mac":"nope"}`}, "u"); !ok || err == nil || !strings.Contains(err.Error(), "mac:") {
		t.Errorf("a bad spec names the field: %v", err)
	}
}

func TestRARPFrame(t *testing.T) {
	mac, _ := net.ParseMAC("0a:58:c6:12:fa:0a")
	f := RARPFrame(mac)
	want := "ffffffffffff0a58c612fa0a8035" + "0001" + "0800" + "06" + "04" + "0003" + "0a58c612fa0a" + "00000000" + "0a58c612fa0a" + "00000000"
	if got := hex.EncodeToString(f[:42]); got != want {
		t.Errorf("frame %s\nwant  %s", got, want)
	}
	if len(f) != 60 {
		t.Errorf("frame is %d bytes, want the Ethernet minimum of 60", len(f))
	}
}
