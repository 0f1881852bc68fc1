package ovs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/ovs/model/vswitch"
)

// Switch is a node's Open_vSwitch database through one long-lived
// connection: the switch, its bridges, ports and interfaces are read from a
// monitored cache, and every change is one transaction built in code.
type Switch struct {
	// Socket is the database's endpoint, unix:PATH.
	Socket string
	*conn
	// noWait: commits do not wait for ovs-vswitchd to apply them.
	noWait bool
	// reconfigured is closed (and replaced) whenever the switch's
	// Open_vSwitch row changes: cur_cfg moving on means vswitchd applied a
	// transaction.
	mu           sync.Mutex
	reconfigured chan struct{}
}

// Option changes how a Switch is opened.
type Option func(*Switch)

// NoWait makes commits return once the database has them, without waiting
// for ovs-vswitchd to apply them (ovs-vsctl --no-wait): for a database no
// vswitchd serves.
func NoWait() Option { return func(s *Switch) { s.noWait = true } }

// switchModel is the part of the Open_vSwitch schema netshift reads and writes.
func switchModel() (model.ClientDBModel, error) {
	return model.NewClientDBModel(vswitch.Schema().Name, map[string]model.Model{
		vswitch.OpenvSwitchTable: &vswitch.OpenvSwitch{},
		vswitch.BridgeTable:      &vswitch.Bridge{},
		vswitch.PortTable:        &vswitch.Port{},
		vswitch.InterfaceTable:   &vswitch.Interface{},
	})
}

// OpenSwitch connects to a node's Open_vSwitch database and monitors the
// columns netshift uses (not the statistics vswitchd rewrites every few
// seconds).
func OpenSwitch(ctx context.Context, socket string, opts ...Option) (*Switch, error) {
	db, err := switchModel()
	if err != nil {
		return nil, err
	}
	var (
		o vswitch.OpenvSwitch
		b vswitch.Bridge
		p vswitch.Port
		i vswitch.Interface
	)
	c, err := dial(ctx, "OVSDB "+socket, socket, nil, db,
		client.WithTable(&o, &o.Bridges, &o.ExternalIDs, &o.NextCfg, &o.CurCfg),
		client.WithTable(&b, &b.Name, &b.Ports, &b.ExternalIDs, &b.DatapathType),
		client.WithTable(&p, &p.Name, &p.Interfaces, &p.Tag, &p.ExternalIDs),
		client.WithTable(&i, &i.Name, &i.Type, &i.Ofport, &i.Options, &i.ExternalIDs, &i.MTURequest))
	if err != nil {
		return nil, err
	}
	sw := &Switch{Socket: socket, conn: c, reconfigured: make(chan struct{})}
	for _, o := range opts {
		o(sw)
	}
	c.c.Cache().AddEventHandler(&cache.EventHandlerFuncs{UpdateFunc: func(table string, _, _ model.Model) {
		if table == vswitch.OpenvSwitchTable {
			sw.mu.Lock()
			close(sw.reconfigured)
			sw.reconfigured = make(chan struct{})
			sw.mu.Unlock()
		}
	}})
	return sw, nil
}

// commit sends ops as one transaction and, as ovs-vsctl does, asks
// ovs-vswitchd to apply it (next_cfg) and waits until it has (cur_cfg); it
// returns when the database committed it.
func (s *Switch) commit(ctx context.Context, what string, ops []ovsdb.Operation) (committed time.Time, err error) {
	if len(ops) == 0 {
		return time.Now(), nil
	}
	if s.noWait {
		_, err := s.transact(ctx, what, ops)
		return time.Now(), err
	}
	full, err := s.withNextCfg(ctx, what, ops)
	if err != nil {
		return time.Time{}, err
	}
	res, err := s.transact(ctx, what, full)
	if err != nil {
		return time.Time{}, err
	}
	return s.applied(ctx, what, time.Now(), res)
}

// withNextCfg appends to ops the bump of next_cfg that asks ovs-vswitchd
// to apply the transaction, and the read of its new value.
func (s *Switch) withNextCfg(ctx context.Context, what string, ops []ovsdb.Operation) ([]ovsdb.Operation, error) {
	root, err := s.root(ctx)
	if err != nil {
		return nil, err
	}
	r := vswitch.OpenvSwitch{UUID: root.UUID}
	bump, err := s.c.Where(&r).Mutate(&r, model.Mutation{Field: &r.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.what, what, err)
	}
	read := ovsdb.Operation{Op: ovsdb.OperationSelect, Table: vswitch.OpenvSwitchTable, Columns: []string{"next_cfg"},
		Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: root.UUID}}}}
	return append(append(slices.Clip(ops), bump...), read), nil
}

// applied reads the next_cfg a committed transaction (withNextCfg) asked
// for and waits until ovs-vswitchd has applied it.
func (s *Switch) applied(ctx context.Context, what string, committed time.Time, res []ovsdb.OperationResult) (time.Time, error) {
	rows := res[len(res)-1].Rows
	if len(rows) != 1 {
		return committed, fmt.Errorf("%s: %s: next_cfg not read back", s.what, what)
	}
	want, ok := cfgValue(rows[0]["next_cfg"])
	if !ok {
		return committed, fmt.Errorf("%s: %s: next_cfg %v unreadable", s.what, what, rows[0]["next_cfg"])
	}
	return committed, s.waitApplied(ctx, what, want)
}

// cfgValue reads an integer column of a select's row (a JSON number).
func cfgValue(v any) (int, bool) {
	n, ok := v.(float64)
	return int(n), ok
}

// waitApplied waits until ovs-vswitchd reports configuration want applied.
func (s *Switch) waitApplied(ctx context.Context, what string, want int) error {
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		changed := s.reconfigured
		s.mu.Unlock()
		root, err := s.root(ctx)
		if err != nil {
			return err
		}
		if root.CurCfg >= want {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%s: %s: committed, but ovs-vswitchd did not apply it (cur_cfg %d, want %d): is it running?", s.what, what, root.CurCfg, want)
		}
	}
}

// Close ends the connection.
func (s *Switch) Close() { s.close() }

// Reachable checks that the database answers.
func (s *Switch) Reachable(ctx context.Context) error { return s.reachable(ctx) }

// root is the switch's one Open_vSwitch row.
func (s *Switch) root(ctx context.Context) (vswitch.OpenvSwitch, error) {
	var rows []vswitch.OpenvSwitch
	if err := s.list(ctx, &rows); err != nil {
		return vswitch.OpenvSwitch{}, err
	}
	if len(rows) != 1 {
		return vswitch.OpenvSwitch{}, fmt.Errorf("%s: %d Open_vSwitch rows, want 1 (is ovs-vswitchd's database initialized?)", s.what, len(rows))
	}
	return rows[0], nil
}

// OpenvSwitchExternalID reads one of the switch's own external_ids ("" when unset).
func (s *Switch) OpenvSwitchExternalID(ctx context.Context, key string) (string, error) {
	root, err := s.root(ctx)
	if err != nil {
		return "", err
	}
	return root.ExternalIDs[key], nil
}

// Tunnels lists the VXLAN and Geneve interfaces, by name.
func (s *Switch) Tunnels(ctx context.Context) ([]Tunnel, error) {
	var ifaces []vswitch.Interface
	if err := s.list(ctx, &ifaces); err != nil {
		return nil, err
	}
	var tunnels []Tunnel
	for _, i := range ifaces {
		if i.Type != "vxlan" && i.Type != "geneve" {
			continue
		}
		t := Tunnel{Name: i.Name, Type: i.Type, uuid: i.UUID}
		if i.Ofport != nil {
			t.OFPort = *i.Ofport
		}
		t.DstPort, _ = strconv.Atoi(i.Options["dst_port"])
		tunnels = append(tunnels, t)
	}
	sort.Slice(tunnels, func(i, j int) bool { return tunnels[i].Name < tunnels[j].Name })
	return tunnels, nil
}

// Prepared is a transaction built ahead of its time: Commit only sends it.
type Prepared struct {
	s    *Switch
	what string
	ops  []ovsdb.Operation
	// line is the connection of its own Arm opened, nil if not armed.
	line *armedLine
	// Names are the rows it changes (the tunnels of a port change).
	Names []string
	// Committed is when the database committed it (set by Commit).
	Committed time.Time
}

// Arm opens the transaction's own connection to the database and encodes
// it whole, next_cfg included, so that Commit only writes it and reads the
// reply on the calling thread (see armedLine). Release (or Commit) closes
// it. A transaction that is not armed goes through the switch's connection.
func (p *Prepared) Arm(ctx context.Context) error {
	if p.line != nil || len(p.ops) == 0 {
		return nil
	}
	full := p.ops
	if !p.s.noWait {
		var err error
		if full, err = p.s.withNextCfg(ctx, p.what, p.ops); err != nil {
			return err
		}
	}
	line, err := dialArmed(p.s.what+": "+p.what, p.s.Socket, vswitch.Schema().Name, full)
	if err != nil {
		return err
	}
	p.line = line
	return nil
}

// Release closes what Arm opened; a released transaction can still be
// committed, through the switch's connection.
func (p *Prepared) Release() {
	p.line.close()
	p.line = nil
}

// Commit sends the prepared transaction and waits until ovs-vswitchd has
// applied it; Committed is when the database committed it.
func (p *Prepared) Commit(ctx context.Context) error {
	if p.line == nil {
		var err error
		p.Committed, err = p.s.commit(ctx, p.what, p.ops)
		return err
	}
	full := p.line.ops
	res, at, err := p.line.exchange()
	p.Release()
	if err != nil {
		// The line broke (the server restarted since Arm, say). The transaction
		// only sets values, so sending it again through the switch's connection
		// loses nothing, whether or not the first one was committed.
		log.FromContext(ctx).Info("armed OVSDB transaction failed; sending it through the switch's connection", "what", p.what, "error", err.Error())
		p.Committed, err = p.s.commit(ctx, p.what, p.ops)
		return err
	}
	if _, err := ovsdb.CheckOperationResults(res, full); err != nil {
		return fmt.Errorf("%s: %s: %w", p.s.what, p.what, err)
	}
	if p.s.noWait {
		p.Committed = at
		return nil
	}
	p.Committed, err = p.s.applied(ctx, p.what, at, res)
	return err
}

// PrepareTunnelPort builds the transaction that sets options:dst_port of
// every tunnel of the given type, in place and at once, keeping every other
// option: the ports keep their ofports, and each node's mismatch window is
// one transaction long. It is built from the cache now and only sent at
// Commit, so a live change's step costs one round trip at its time.
func (s *Switch) PrepareTunnelPort(ctx context.Context, typ string, port int) (*Prepared, error) {
	tunnels, err := s.Tunnels(ctx)
	if err != nil {
		return nil, err
	}
	p := &Prepared{s: s, what: fmt.Sprintf("set %s tunnels' dst_port to %d", typ, port)}
	for _, t := range tunnels {
		if t.Type != typ {
			continue
		}
		i := vswitch.Interface{UUID: t.uuid}
		ops, err := s.c.Where(&i).Mutate(&i, setKeys(&i.Options, map[string]string{"dst_port": strconv.Itoa(port)})...)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.what, p.what, err)
		}
		p.ops = append(p.ops, ops...)
		p.Names = append(p.Names, t.Name)
	}
	return p, nil
}

// SetTunnelPort sets options:dst_port of every tunnel of the given type in
// one transaction (PrepareTunnelPort, committed at once); it returns their names.
func (s *Switch) SetTunnelPort(ctx context.Context, typ string, port int) ([]string, error) {
	p, err := s.PrepareTunnelPort(ctx, typ, port)
	if err != nil {
		return nil, err
	}
	return p.Names, p.Commit(ctx)
}

// PrepareMTURequest builds the transaction that sets mtu_request on
// OVS-owned interfaces (internal ports).
func (s *Switch) PrepareMTURequest(mtu int, ifaces ...string) (*Prepared, error) {
	p := &Prepared{s: s, what: fmt.Sprintf("set mtu_request %d on %v", mtu, ifaces), Names: ifaces}
	for _, name := range ifaces {
		i := vswitch.Interface{Name: name, MTURequest: &mtu}
		ops, err := s.c.Where(&i).Update(&i, &i.MTURequest)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.what, p.what, err)
		}
		p.ops = append(p.ops, ops...)
	}
	return p, nil
}

// SetMTURequest sets mtu_request on OVS-owned interfaces in one transaction.
func (s *Switch) SetMTURequest(ctx context.Context, mtu int, ifaces ...string) error {
	p, err := s.PrepareMTURequest(mtu, ifaces...)
	if err != nil {
		return err
	}
	return p.Commit(ctx)
}

// Interfaces reads the named interfaces from the database itself, not the
// cache: readiness must see the row that is there now (a port unplugged and
// plugged again is a new row), in one round trip. A missing one is left out.
func (s *Switch) Interfaces(ctx context.Context, names ...string) (map[string]Interface, error) {
	if len(names) == 0 {
		return map[string]Interface{}, nil
	}
	ops := make([]ovsdb.Operation, 0, len(names))
	for _, name := range names {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: vswitch.InterfaceTable, Columns: []string{"_uuid", "name", "ofport", "external_ids"},
			Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: name}}})
	}
	res, err := s.transact(ctx, "read interfaces", ops)
	if err != nil {
		return nil, err
	}
	found := map[string]Interface{}
	for _, r := range res {
		for _, row := range r.Rows {
			name, _ := row["name"].(string)
			i := Interface{Name: name}
			if u, ok := row["_uuid"].(ovsdb.UUID); ok {
				i.UUID = u.GoUUID
			}
			if n, ok := row["ofport"].(float64); ok {
				i.OFPort = int(n)
			}
			if m, ok := row["external_ids"].(ovsdb.OvsMap); ok {
				i.OVNInstalled = m.GoMap["ovn-installed"] == "true"
				i.IfaceID, _ = m.GoMap["iface-id"].(string)
			}
			found[name] = i
		}
	}
	return found, nil
}

// PodPorts are the node's interfaces that pods may be attached through: every
// interface of the integration bridge and of netshift's per-port bridges
// (pbr-*), by name.
func (s *Switch) PodPorts(ctx context.Context, integration string) (map[string]PodPort, error) {
	t, err := s.tables(ctx)
	if err != nil {
		return nil, err
	}
	found := map[string]PodPort{}
	for _, b := range t.bridges {
		if b.Name != integration && !isPortBridge(b.Name) {
			continue
		}
		for _, pu := range b.Ports {
			for _, iu := range t.ports[pu].Interfaces {
				if i, ok := t.ifaces[iu]; ok {
					found[i.Name] = PodPort{Bridge: b.Name, Type: i.Type}
				}
			}
		}
	}
	return found, nil
}

// IfaceIDs lists the OVN logical ports the node's interfaces are bound to
// (their iface-id), each with the interface's name.
func (s *Switch) IfaceIDs(ctx context.Context) (map[string]string, error) {
	var is []vswitch.Interface
	if err := s.list(ctx, &is); err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, i := range is {
		if id := i.ExternalIDs["iface-id"]; id != "" {
			ids[id] = i.Name
		}
	}
	return ids, nil
}

// tables is a snapshot of the cached switch: bridges by name, ports and
// interfaces by UUID.
type tables struct {
	root    vswitch.OpenvSwitch
	bridges map[string]vswitch.Bridge
	ports   map[string]vswitch.Port
	ifaces  map[string]vswitch.Interface
}

func (s *Switch) tables(ctx context.Context) (tables, error) {
	var t tables
	var err error
	if t.root, err = s.root(ctx); err != nil {
		return t, err
	}
	var bs []vswitch.Bridge
	var ps []vswitch.Port
	var is []vswitch.Interface
	for _, l := range []any{&bs, &ps, &is} {
		if err := s.list(ctx, l); err != nil {
			return t, err
		}
	}
	t.bridges = make(map[string]vswitch.Bridge, len(bs))
	for _, b := range bs {
		t.bridges[b.Name] = b
	}
	t.ports = make(map[string]vswitch.Port, len(ps))
	for _, p := range ps {
		t.ports[p.UUID] = p
	}
	t.ifaces = make(map[string]vswitch.Interface, len(is))
	for _, i := range is {
		t.ifaces[i.UUID] = i
	}
	return t, nil
}

// portNamed finds a bridge's port by name.
func (t tables) portNamed(bridge vswitch.Bridge, name string) (vswitch.Port, bool) {
	for _, pu := range bridge.Ports {
		if p, ok := t.ports[pu]; ok && p.Name == name {
			return p, true
		}
	}
	return vswitch.Port{}, false
}

// bridgeOfPort is the bridge a port (by name) is on.
func (t tables) bridgeOfPort(name string) (vswitch.Bridge, vswitch.Port, bool) {
	for _, b := range t.bridges {
		if p, ok := t.portNamed(b, name); ok {
			return b, p, true
		}
	}
	return vswitch.Bridge{}, vswitch.Port{}, false
}

// DatapathType is a bridge's datapath_type ("" is the system datapath).
func (s *Switch) DatapathType(ctx context.Context, bridge string) (string, error) {
	b := vswitch.Bridge{Name: bridge}
	if err := s.c.Get(ctx, &b); err != nil {
		return "", fmt.Errorf("%s: bridge %s: %w", s.what, bridge, err)
	}
	return b.DatapathType, nil
}

// WithSwitch opens the switch at socket for the length of f: for a caller
// that reads or changes a switch once (the lab, a test), not for an agent.
func WithSwitch(ctx context.Context, socket string, f func(*Switch) error) error {
	s, err := OpenSwitch(ctx, socket)
	if err != nil {
		return err
	}
	defer s.Close()
	return f(s)
}
