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
