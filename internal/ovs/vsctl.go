// Package ovs changes a node's Open vSwitch through its OVSDB socket: the
// tunnel ports' destination port and the MTU of OVS-owned ports. Each change
// is one OVSDB transaction.
package ovs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DB is one node's OVSDB, reached through its socket (unix:PATH).
type DB struct {
	Socket string
}

func (d DB) vsctl(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "OVSDB "+d.Socket, "ovs-vsctl", append([]string{"--db=" + d.Socket, "--timeout=10"}, args...))
}

// run runs an OVS or OVN client; the error names the database and the command.
func run(ctx context.Context, where, bin string, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %s %s: %w: %s", where, bin, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Reachable checks that the database answers.
func (d DB) Reachable(ctx context.Context) error {
	_, err := d.vsctl(ctx, "--no-wait", "show")
	return err
}

// Tunnel is a tunnel interface.
type Tunnel struct {
	Name   string
	Type   string
	OFPort int
	// DstPort is options:dst_port, 0 when unset (the protocol's default).
	DstPort int
}

// Tunnels lists the VXLAN and Geneve interfaces.
func (d DB) Tunnels(ctx context.Context) ([]Tunnel, error) {
	out, err := d.vsctl(ctx, "--format=json", "--columns=name,type,ofport,options", "list", "interface")
	if err != nil {
		return nil, err
	}
	var table struct {
		Data [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &table); err != nil {
		return nil, fmt.Errorf("OVSDB %s: interface table: %w", d.Socket, err)
	}
	var tunnels []Tunnel
	for _, row := range table.Data {
		var name, typ string
		_ = json.Unmarshal(row[0], &name)
		_ = json.Unmarshal(row[1], &typ)
		if typ != "vxlan" && typ != "geneve" {
			continue
		}
		t := Tunnel{Name: name, Type: typ}
		_ = json.Unmarshal(row[2], &t.OFPort)
		t.DstPort, _ = strconv.Atoi(externalIDs(row[3])["dst_port"]) // options is an OVSDB map too
		tunnels = append(tunnels, t)
	}
	sort.Slice(tunnels, func(i, j int) bool { return tunnels[i].Name < tunnels[j].Name })
	return tunnels, nil
}

// SetTunnelPort changes options:dst_port of every tunnel of the given type,
// in place and in ONE transaction, keeping every other option: the ports keep
// their ofports and every node's mismatch window is one transaction long.
func (d DB) SetTunnelPort(ctx context.Context, typ string, port int) ([]string, error) {
	tunnels, err := d.Tunnels(ctx)
	if err != nil {
		return nil, err
	}
	var args, names []string
	for _, t := range tunnels {
		if t.Type != typ {
			continue
		}
		args = append(args, "--", "set", "interface", t.Name, "options:dst_port="+strconv.Itoa(port))
		names = append(names, t.Name)
	}
	if len(args) == 0 {
		return nil, nil
	}
	if _, err := d.vsctl(ctx, args[1:]...); err != nil {
		return nil, err
	}
	return names, nil
}

// SetMTURequest sets mtu_request on OVS-owned ports (internal ports) in one
// transaction.
func (d DB) SetMTURequest(ctx context.Context, mtu int, ifaces ...string) error {
	var args []string
	for _, i := range ifaces {
		args = append(args, "--", "set", "interface", i, "mtu_request="+strconv.Itoa(mtu))
	}
	if len(args) == 0 {
		return nil
	}
	_, err := d.vsctl(ctx, args[1:]...)
	return err
}

// PodPort is an interface pods may be attached through.
type PodPort struct {
	Bridge string
	Type   string // "" for a system device (a veth), "internal", "patch", ...
}

// PodPorts are the node's interfaces that pods may be attached through: every
// interface of the integration bridge and of netshift's per-port bridges
// (pbr-*), by name.
func (d DB) PodPorts(ctx context.Context, integration string) (map[string]PodPort, error) {
	out, err := d.vsctl(ctx, "--format=json", "--", "--columns=name,ports", "list", "bridge",
		"--", "--columns=_uuid,name,interfaces", "list", "port",
		"--", "--columns=_uuid,name,type", "list", "interface")
	if err != nil {
		return nil, err
	}
	tables, err := decodeTables(out)
	if err != nil || len(tables) != 3 {
		return nil, fmt.Errorf("OVSDB %s: bridges, ports and interfaces: unreadable answer: %v", d.Socket, err)
	}
	ifaceType := map[string][2]string{} // interface uuid -> name, type
	for _, row := range tables[2] {
		if len(row) == 3 {
			ifaceType[uuidOf(row[0])] = [2]string{str(row[1]), str(row[2])}
		}
	}
	portIfaces := map[string][]string{} // port uuid -> interface uuids
	for _, row := range tables[1] {
		if len(row) == 3 {
			portIfaces[uuidOf(row[0])] = uuidSet(row[2])
		}
	}
	found := map[string]PodPort{}
	for _, row := range tables[0] {
		if len(row) != 2 {
			continue
		}
		name := str(row[0])
		if name != integration && !strings.HasPrefix(name, "pbr-") {
			continue
		}
		for _, port := range uuidSet(row[1]) {
			for _, i := range portIfaces[port] {
				if it, ok := ifaceType[i]; ok {
					found[it[0]] = PodPort{Bridge: name, Type: it[1]}
				}
			}
		}
	}
	return found, nil
}

// uuidOf reads ["uuid","..."].
func uuidOf(raw json.RawMessage) string {
	var pair []string
	if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 && pair[0] == "uuid" {
		return pair[1]
	}
	return ""
}

// uuidSet reads a set of uuids: ["uuid","..."] or ["set",[["uuid","..."],...]].
func uuidSet(raw json.RawMessage) []string {
	if u := uuidOf(raw); u != "" {
		return []string{u}
	}
	var set []json.RawMessage
	if json.Unmarshal(raw, &set) != nil || len(set) != 2 {
		return nil
	}
	var members []json.RawMessage
	if json.Unmarshal(set[1], &members) != nil {
		return nil
	}
	var out []string
	for _, m := range members {
		if u := uuidOf(m); u != "" {
			out = append(out, u)
		}
	}
	return out
}
