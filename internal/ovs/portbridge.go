package ovs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"netshift.io/netshift/internal/plug"
)

// The external_ids netshift writes on what it plugs: a restarted agent finds
// its ports by them, and unplug removes exactly what carries them.
const (
	extPortID = "netshift-port-id"
	extOwner  = "netshift-owner"
	extMode   = "netshift-plug-mode"
	extTap    = "netshift-tap"
	// DeadVLAN isolates a port inside its port bridge: NORMAL never forwards VLAN 4095.
	DeadVLAN = 4095
)

// DatapathType is a bridge's datapath_type ("" is the system datapath).
func (d DB) DatapathType(ctx context.Context, bridge string) (string, error) {
	out, err := d.vsctl(ctx, "get", "bridge", bridge, "datapath_type")
	if err != nil {
		return "", err
	}
	return strings.Trim(strings.TrimSpace(out), `"`), nil
}

// Plug plugs port p for owner, in ONE OVSDB transaction, so a crash leaves
// either all of it or nothing. Per-port: the bridge pbr-<id> with the
// integration bridge's datapath type (and so its default NORMAL flow), the
// patch pair pbp-<id>/ipb-<id>, the identifying external_ids on ipb-<id>,
// VLAN 4095 on pbp-<id> when isolate, and the tap on the port bridge, whether
// or not its device exists yet (vswitchd attaches it when it appears).
// Direct: the tap on the integration bridge with the identifying
// external_ids. Plugging again repairs what is missing; it never isolates an
// activated port again (isolate is the caller's, see plug.Admit).
func (d DB) Plug(ctx context.Context, mode plug.Mode, p plug.Port, owner string, isolate bool, integration, datapath string) error {
	ids := []string{"external_ids:iface-id=" + p.ID, "external_ids:iface-status=active",
		"external_ids:attached-mac=" + p.MAC, "external_ids:vm-uuid=" + p.VMUUID}
	own := []string{"external_ids:" + extPortID + "=" + p.ID, "external_ids:" + extOwner + "=" + owner,
		"external_ids:" + extMode + "=" + string(mode), "external_ids:" + extTap + "=" + p.Tap}
	var args []string
	switch mode {
	case plug.PerPort:
		n := plug.NamesFor(p.ID)
		args = append(args, "--may-exist", "add-br", n.Bridge,
			"--", "set", "bridge", n.Bridge, "datapath_type="+datapath)
		args = append(append(args, "--", "set", "bridge", n.Bridge), own...)
		args = append(args,
			"--", "--may-exist", "add-port", n.Bridge, n.BridgePatch,
			"--", "set", "interface", n.BridgePatch, "type=patch", "options:peer="+n.IntegrationPatch,
			"--", "--may-exist", "add-port", integration, n.IntegrationPatch,
			"--", "set", "interface", n.IntegrationPatch, "type=patch", "options:peer="+n.BridgePatch)
		args = append(args, ids...)
		args = append(args, "external_ids:"+extPortID+"="+p.ID)
		if isolate {
			args = append(args, "--", "set", "port", n.BridgePatch, fmt.Sprintf("tag=%d", DeadVLAN))
		}
		args = append(args, "--", "--may-exist", "add-port", n.Bridge, p.Tap,
			"--", "set", "interface", p.Tap, "external_ids:"+extPortID+"="+p.ID)
	case plug.Direct:
		args = append(args, "--may-exist", "add-port", integration, p.Tap, "--", "set", "interface", p.Tap)
		args = append(append(args, ids...), own...)
	default:
		return fmt.Errorf("port %s: unknown plug mode %q", p.ID, mode)
	}
	if _, err := d.vsctl(ctx, args...); err != nil {
		return fmt.Errorf("plug port %s (%s) for %s: %w", p.ID, mode, owner, err)
	}
	return nil
}

// Activate lets an isolated port's traffic through its port bridge.
func (d DB) Activate(ctx context.Context, portID string) error {
	if _, err := d.vsctl(ctx, "clear", "port", plug.NamesFor(portID).BridgePatch, "tag"); err != nil {
		return fmt.Errorf("activate port %s: %w", portID, err)
	}
	return nil
}

// Unplug removes everything Plug created for the port, in one transaction,
// and nothing else.
func (d DB) Unplug(ctx context.Context, pl plug.Plugged, integration string) error {
	var args []string
	switch pl.Mode {
	case plug.PerPort:
		n := plug.NamesFor(pl.PortID)
		args = []string{"--if-exists", "del-br", n.Bridge, "--", "--if-exists", "del-port", integration, n.IntegrationPatch}
	default:
		args = []string{"--if-exists", "del-port", integration, pl.Tap}
	}
	if _, err := d.vsctl(ctx, args...); err != nil {
		return fmt.Errorf("unplug port %s (%s) of %s: %w", pl.PortID, pl.Mode, pl.Owner, err)
	}
	return nil
}

// Plugged lists the ports netshift has plugged: per-port bridges and direct
// taps, by their external_ids.
func (d DB) Plugged(ctx context.Context) ([]plug.Plugged, error) {
	out, err := d.vsctl(ctx, "--format=json",
		"--", "--columns=name,external_ids", "list", "bridge",
		"--", "--columns=name,external_ids", "list", "interface",
		"--", "--columns=name,tag", "list", "port")
	if err != nil {
		return nil, err
	}
	tables, err := decodeTables(out)
	if err != nil || len(tables) != 3 {
		return nil, fmt.Errorf("OVSDB %s: plugged ports: unexpected answer (%v)", d.Socket, err)
	}
	tags := map[string]bool{}
	for _, row := range tables[2] {
		var tag int
		if json.Unmarshal(row[1], &tag) == nil && tag == DeadVLAN {
			tags[str(row[0])] = true
		}
	}
	var plugged []plug.Plugged
	for _, row := range tables[0] {
		ext := externalIDs(row[1])
		if ext[extPortID] == "" || plug.Mode(ext[extMode]) != plug.PerPort {
			continue
		}
		plugged = append(plugged, plug.Plugged{PortID: ext[extPortID], Mode: plug.PerPort, Owner: ext[extOwner], Tap: ext[extTap],
			Bridge: str(row[0]), Isolated: tags[plug.NamesFor(ext[extPortID]).BridgePatch]})
	}
	for _, row := range tables[1] {
		ext := externalIDs(row[1])
		if ext[extPortID] == "" || plug.Mode(ext[extMode]) != plug.Direct {
			continue
		}
		plugged = append(plugged, plug.Plugged{PortID: ext[extPortID], Mode: plug.Direct, Owner: ext[extOwner], Tap: str(row[0])})
	}
	return plugged, nil
}

// Interface is what the readiness of a port is read from.
type Interface struct {
	Name   string
	OFPort int // -1: the device does not exist (yet); 0: not read
	// OVNInstalled is external_ids:ovn-installed=true, which ovn-controller
	// sets once the port is bound and its flows are in place.
	OVNInstalled bool
}

// Interfaces reads the named interfaces; a missing one is left out.
func (d DB) Interfaces(ctx context.Context, names ...string) (map[string]Interface, error) {
	args := []string{"--format=json"}
	for _, n := range names {
		args = append(args, "--", "--columns=name,ofport,external_ids", "find", "interface", "name="+n)
	}
	out, err := d.vsctl(ctx, args...)
	if err != nil {
		return nil, err
	}
	tables, err := decodeTables(out)
	if err != nil {
		return nil, fmt.Errorf("OVSDB %s: interfaces: %w", d.Socket, err)
	}
	found := map[string]Interface{}
	for _, rows := range tables {
		for _, row := range rows {
			i := Interface{Name: str(row[0])}
			_ = json.Unmarshal(row[1], &i.OFPort)
			i.OVNInstalled = externalIDs(row[2])["ovn-installed"] == "true"
			found[i.Name] = i
		}
	}
	return found, nil
}

// TapInUse reads what the switch holds under name: whether an interface of
// that name exists, its type, and the netshift port it was plugged for (the
// device side is the caller's, read with netlink).
func (d DB) TapInUse(ctx context.Context, name string) (plug.TapInUse, error) {
	out, err := d.vsctl(ctx, "--format=json", "--columns=type,external_ids", "find", "interface", "name="+name)
	if err != nil {
		return plug.TapInUse{}, err
	}
	tables, err := decodeTables(out)
	if err != nil || len(tables) != 1 {
		return plug.TapInUse{}, fmt.Errorf("OVSDB %s: interface %s: unexpected answer (%v)", d.Socket, name, err)
	}
	if len(tables[0]) == 0 {
		return plug.TapInUse{}, nil
	}
	row := tables[0][0]
	return plug.TapInUse{InSwitch: true, Type: str(row[0]), PortID: externalIDs(row[1])[extPortID]}, nil
}

// decodeTables reads the JSON tables ovs-vsctl prints, one per command.
func decodeTables(out string) ([][][]json.RawMessage, error) {
	var tables [][][]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	for {
		var t struct {
			Data [][]json.RawMessage `json:"data"`
		}
		if err := dec.Decode(&t); err == io.EOF {
			return tables, nil
		} else if err != nil {
			return nil, err
		}
		tables = append(tables, t.Data)
	}
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// externalIDs reads an OVSDB map (external_ids, options), ["map", [["k","v"], ...]].
func externalIDs(raw json.RawMessage) map[string]string {
	m := map[string]string{}
	var pair []json.RawMessage
	if json.Unmarshal(raw, &pair) != nil || len(pair) != 2 {
		return m
	}
	var kv [][2]string
	if json.Unmarshal(pair[1], &kv) == nil {
		for _, p := range kv {
			m[p[0]] = p[1]
		}
	}
	return m
}

// OpenvSwitchExternalID reads one of the switch's own external_ids ("" when unset).
func (d DB) OpenvSwitchExternalID(ctx context.Context, key string) (string, error) {
	out, err := d.vsctl(ctx, "--if-exists", "get", "open_vswitch", ".", "external_ids:"+key)
	if err != nil {
		return "", err
	}
	return strings.Trim(strings.TrimSpace(out), `"`), nil
}

// Announce sends the RARP of a resumed VM (plug.RARPFrame) into a per-port
// bridge's patch port, so that it reaches the integration bridge as if the VM
// had sent it: OVN's activation-strategy=rarp then unblocks the port on this
// chassis. Only the port bridge's patch port receives it (no tap).
func (d DB) Announce(ctx context.Context, portID string, mac net.HardwareAddr) error {
	n := plug.NamesFor(portID)
	ifaces, err := d.Interfaces(ctx, n.BridgePatch)
	if err != nil {
		return err
	}
	ofport := ifaces[n.BridgePatch].OFPort
	if ofport <= 0 {
		return fmt.Errorf("announce port %s: %s has no ofport", portID, n.BridgePatch)
	}
	// vswitchd's OpenFlow management socket lives beside its database socket.
	mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(d.Socket, "unix:")), n.Bridge+".mgmt")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ovs-ofctl", "packet-out", mgmt,
		fmt.Sprintf("in_port=LOCAL,packet=%x,actions=output:%d", plug.RARPFrame(mac), ofport)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("announce port %s into %s: ovs-ofctl packet-out: %w: %s", portID, n.Bridge, err, strings.TrimSpace(string(out)))
	}
	return nil
}
