package ovs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"netshift.io/netshift/internal/ovs/model/vswitch"
	"netshift.io/netshift/internal/plug"
)

func isPortBridge(name string) bool { return strings.HasPrefix(name, "pbr-") }

// txn gathers the operations of one transaction; the first error sticks.
type txn struct {
	s     *Switch
	ops   []ovsdb.Operation
	err   error
	named int
}

func (x *txn) add(ops []ovsdb.Operation, err error) {
	if x.err == nil {
		x.ops, x.err = append(x.ops, ops...), err
	}
}

// name is a fresh named UUID: a row created in this transaction, referred to
// by other rows of it.
func (x *txn) name(prefix string) string {
	x.named++
	return fmt.Sprintf("%s%d", prefix, x.named)
}

// setRowKeys sets keys of a row's map column and removes the keys drop, its
// other keys kept.
func setRowKeys[M model.Model](x *txn, row M, column *map[string]string, kv map[string]string, drop ...string) {
	if len(kv) == 0 && len(drop) == 0 {
		return
	}
	x.add(x.s.c.Where(row).Mutate(row, setKeys(column, kv, drop...)...))
}

// ifaceSpec is what an interface of a plugged port must be.
type ifaceSpec struct {
	Type        string
	Options     map[string]string
	ExternalIDs map[string]string
	// DropIDs are external_ids keys an existing interface loses.
	DropIDs []string
}

// ensurePort makes port name (one interface of the same name) exist on a
// bridge as spec says, with tag when not nil, creating or repairing it. It
// returns the port's UUID, named when it is created here: the caller adds it
// to a new bridge's ports; on an existing bridge it is inserted here.
func (x *txn) ensurePort(t tables, bridge *vswitch.Bridge, name string, spec ifaceSpec, tag *int) string {
	if bridge != nil {
		if p, ok := t.portNamed(*bridge, name); ok {
			for _, iu := range p.Interfaces {
				i := t.ifaces[iu]
				if i.Type != spec.Type || !maps.Equal(i.Options, spec.Options) && spec.Options != nil {
					row := vswitch.Interface{UUID: iu, Type: spec.Type, Options: spec.Options}
					x.add(x.s.c.Where(&row).Update(&row, &row.Type, &row.Options))
				}
				row := vswitch.Interface{UUID: iu}
				setRowKeys(x, &row, &row.ExternalIDs, spec.ExternalIDs, spec.DropIDs...)
			}
			if tag != nil && (p.Tag == nil || *p.Tag != *tag) {
				row := vswitch.Port{UUID: p.UUID, Tag: tag}
				x.add(x.s.c.Where(&row).Update(&row, &row.Tag))
			}
			return p.UUID
		}
	}
	i := vswitch.Interface{UUID: x.name("iface"), Name: name, Type: spec.Type, Options: spec.Options, ExternalIDs: spec.ExternalIDs}
	p := vswitch.Port{UUID: x.name("port"), Name: name, Interfaces: []string{i.UUID}, Tag: tag}
	x.add(x.s.c.Create(&i, &p))
	if bridge != nil {
		b := vswitch.Bridge{UUID: bridge.UUID}
		x.add(x.s.c.Where(&b).Mutate(&b, model.Mutation{Field: &b.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{p.UUID}}))
	}
	return p.UUID
}

// Plug attaches a port, as one transaction that creates what is missing and
// repairs what differs. Per-port: the port's own bridge pbr-<id> with the
// integration bridge's datapath type (and so its default NORMAL flow), the
// patch pair pbp-<id>/ipb-<id>, the identifying external_ids on ipb-<id>,
// VLAN 4095 on pbp-<id> when isolate, and, unless the port is Held (see
// AttachTap), the tap on the port bridge, whether or not its device exists
// yet (vswitchd attaches it when it appears).
// Direct: the tap on the integration bridge with the identifying
// external_ids. It never isolates an activated port again (isolate is the
// caller's, see plug.Admit). A parked port is adopted: owner becomes its
// owner, and it is parked no more.
func (s *Switch) Plug(ctx context.Context, mode plug.Mode, p plug.Port, owner string, isolate bool, integration, datapath string) error {
	t, err := s.tables(ctx)
	if err != nil {
		return err
	}
	ib, ok := t.bridges[integration]
	if !ok {
		return fmt.Errorf("plug port %s (%s) for %s: %s: no integration bridge %s", p.ID, mode, owner, s.what, integration)
	}
	ids := map[string]string{"iface-id": p.ID, "iface-status": "active", "attached-mac": p.MAC, "vm-uuid": p.VMUUID}
	own := map[string]string{extPortID: p.ID, extOwner: owner, extMode: string(mode), extTap: p.Tap}
	x := &txn{s: s}
	switch mode {
	case plug.PerPort:
		n := plug.NamesFor(p.ID)
		var tag *int
		if isolate {
			dead := DeadVLAN
			tag = &dead
		}
		x.ensurePort(t, &ib, n.IntegrationPatch, ifaceSpec{Type: "patch", Options: map[string]string{"peer": n.BridgePatch},
			ExternalIDs: union(ids, map[string]string{extPortID: p.ID})}, nil)
		if br, ok := t.bridges[n.Bridge]; ok {
			if br.DatapathType != datapath {
				row := vswitch.Bridge{UUID: br.UUID, DatapathType: datapath}
				x.add(s.c.Where(&row).Update(&row, &row.DatapathType))
			}
			row := vswitch.Bridge{UUID: br.UUID}
			setRowKeys(x, &row, &row.ExternalIDs, own, extParkedAt)
			x.ensurePort(t, &br, n.BridgePatch, ifaceSpec{Type: "patch", Options: map[string]string{"peer": n.IntegrationPatch}}, tag)
			if !p.Held {
				x.ensurePort(t, &br, p.Tap, tapSpec(p), nil)
			}
		} else {
			// A new bridge: its own internal port, the patch and (unless Held) the tap, created with it.
			ports := []string{
				x.ensurePort(t, nil, n.Bridge, ifaceSpec{Type: "internal"}, nil),
				x.ensurePort(t, nil, n.BridgePatch, ifaceSpec{Type: "patch", Options: map[string]string{"peer": n.IntegrationPatch}}, tag),
			}
			if !p.Held {
				ports = append(ports, x.ensurePort(t, nil, p.Tap, tapSpec(p), nil))
			}
			b := vswitch.Bridge{UUID: x.name("bridge"), Name: n.Bridge, DatapathType: datapath, ExternalIDs: own, Ports: ports}
			x.add(s.c.Create(&b))
			root := vswitch.OpenvSwitch{UUID: t.root.UUID}
			x.add(s.c.Where(&root).Mutate(&root, model.Mutation{Field: &root.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: []string{b.UUID}}))
		}
	case plug.Direct:
		x.ensurePort(t, &ib, p.Tap, ifaceSpec{ExternalIDs: union(ids, own), DropIDs: []string{extParkedAt}}, nil)
	default:
		return fmt.Errorf("port %s: unknown plug mode %q", p.ID, mode)
	}
	if x.err != nil {
		return fmt.Errorf("plug port %s (%s) for %s: %s: %w", p.ID, mode, owner, s.what, x.err)
	}
	_, err = s.commit(ctx, fmt.Sprintf("plug port %s (%s) for %s", p.ID, mode, owner), x.ops)
	return err
}

// tapSpec is a per-port tap's interface on its port bridge.
func tapSpec(p plug.Port) ifaceSpec {
	return ifaceSpec{ExternalIDs: map[string]string{extPortID: p.ID}}
}

// AttachTap adds a Held port's tap to its port bridge, once the bridge holds
// what comes from the integration bridge for the VM (HoldForVM) or the port
// needs no hold. Attaching again repairs it. The bridge stays standalone:
// should vswitchd restart without its flows, NORMAL is back at once.
func (s *Switch) AttachTap(ctx context.Context, p plug.Port) error {
	t, err := s.tables(ctx)
	if err != nil {
		return err
	}
	n := plug.NamesFor(p.ID)
	br, ok := t.bridges[n.Bridge]
	if !ok {
		return fmt.Errorf("attach the tap %s of port %s: %s: no port bridge %s", p.Tap, p.ID, s.what, n.Bridge)
	}
	x := &txn{s: s}
	x.ensurePort(t, &br, p.Tap, tapSpec(p), nil)
	if x.err != nil {
		return fmt.Errorf("attach the tap %s of port %s: %s: %w", p.Tap, p.ID, s.what, x.err)
	}
	_, err = s.commit(ctx, fmt.Sprintf("attach the tap %s of port %s", p.Tap, p.ID), x.ops)
	return err
}

// PlugSubport attaches a trunk subport's tap to the node's trunk bridge as
// an access port of vlan, as one transaction that creates or repairs it. The
// port carries netshift's identifying external_ids and no iface-id: the
// network binds a subport by its parent port and VLAN.
func (s *Switch) PlugSubport(ctx context.Context, p plug.Port, owner string, vlan int, trunk string) error {
	if vlan < 1 || vlan > 4094 {
		return fmt.Errorf("plug subport %s for %s: VLAN %d: want 1..4094", p.ID, owner, vlan)
	}
	t, err := s.tables(ctx)
	if err != nil {
		return err
	}
	tb, ok := t.bridges[trunk]
	if !ok {
		return fmt.Errorf("plug subport %s for %s: %s: no trunk bridge %s", p.ID, owner, s.what, trunk)
	}
	own := map[string]string{extPortID: p.ID, extOwner: owner, extMode: string(plug.Subport), extTap: p.Tap, "attached-mac": p.MAC}
	x := &txn{s: s}
	x.ensurePort(t, &tb, p.Tap, ifaceSpec{ExternalIDs: own}, &vlan)
	if x.err != nil {
		return fmt.Errorf("plug subport %s (VLAN %d) for %s: %s: %w", p.ID, vlan, owner, s.what, x.err)
	}
	_, err = s.commit(ctx, fmt.Sprintf("plug subport %s (VLAN %d) for %s", p.ID, vlan, owner), x.ops)
	return err
}

func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// Activate lets an isolated port's traffic through its port bridge.
func (s *Switch) Activate(ctx context.Context, portID string) error {
	p := vswitch.Port{Name: plug.NamesFor(portID).BridgePatch}
	ops, err := s.c.Where(&p).Update(&p, &p.Tag)
	if err != nil {
		return fmt.Errorf("activate port %s: %s: %w", portID, s.what, err)
	}
	_, err = s.commit(ctx, "activate port "+portID, ops)
	return err
}

// Unplug removes everything Plug created for the port, in one transaction,
// and nothing else: the port bridge (with its ports and interfaces) and the
// integration bridge's patch port, or the direct tap's port. What is already
// gone is skipped.
func (s *Switch) Unplug(ctx context.Context, pl plug.Plugged, integration string) error {
	t, err := s.tables(ctx)
	if err != nil {
		return err
	}
	x := &txn{s: s}
	x.unplug(t, pl, integration)
	if x.err != nil {
		return fmt.Errorf("unplug port %s (%s) of %s: %s: %w", pl.PortID, pl.Mode, pl.Owner, s.what, x.err)
	}
	_, err = s.commit(ctx, fmt.Sprintf("unplug port %s (%s) of %s", pl.PortID, pl.Mode, pl.Owner), x.ops)
	return err
}

// unplug adds the operations that remove a plug.
func (x *txn) unplug(t tables, pl plug.Plugged, integration string) {
	dropPort := func(name string) {
		if b, p, ok := t.bridgeOfPort(name); ok && (b.Name == integration || isPortBridge(b.Name) || pl.Mode == plug.Subport && b.Name == pl.Bridge) {
			row := vswitch.Bridge{UUID: b.UUID}
			x.add(x.s.c.Where(&row).Mutate(&row, model.Mutation{Field: &row.Ports, Mutator: ovsdb.MutateOperationDelete, Value: []string{p.UUID}}))
		}
	}
	switch pl.Mode {
	case plug.PerPort:
		n := plug.NamesFor(pl.PortID)
		if b, ok := t.bridges[n.Bridge]; ok {
			root := vswitch.OpenvSwitch{UUID: t.root.UUID}
			x.add(x.s.c.Where(&root).Mutate(&root, model.Mutation{Field: &root.Bridges, Mutator: ovsdb.MutateOperationDelete, Value: []string{b.UUID}}))
		}
		dropPort(n.IntegrationPatch)
	default:
		dropPort(pl.Tap)
	}
}

// Plugged lists the ports netshift has plugged: per-port bridges, direct
// taps and subports' access ports, by their external_ids.
func (s *Switch) Plugged(ctx context.Context) ([]plug.Plugged, error) {
	t, err := s.tables(ctx)
	if err != nil {
		return nil, err
	}
	var plugged []plug.Plugged
	for _, b := range t.bridges {
		ext := b.ExternalIDs
		if ext[extPortID] == "" || plug.Mode(ext[extMode]) != plug.PerPort {
			continue
		}
		pl := plug.Plugged{PortID: ext[extPortID], Mode: plug.PerPort, Owner: ext[extOwner], Tap: ext[extTap], Bridge: b.Name, ParkedAt: parkedAt(ext)}
		if p, ok := t.portNamed(b, plug.NamesFor(pl.PortID).BridgePatch); ok && p.Tag != nil && *p.Tag == DeadVLAN {
			pl.Isolated = true
		}
		plugged = append(plugged, pl)
	}
	for _, i := range t.ifaces {
		ext := i.ExternalIDs
		switch mode := plug.Mode(ext[extMode]); {
		case ext[extPortID] == "":
		case mode == plug.Direct:
			plugged = append(plugged, plug.Plugged{PortID: ext[extPortID], Mode: plug.Direct, Owner: ext[extOwner], Tap: i.Name, ParkedAt: parkedAt(ext)})
		case mode == plug.Subport:
			pl := plug.Plugged{PortID: ext[extPortID], Mode: plug.Subport, Owner: ext[extOwner], Tap: i.Name}
			if b, p, ok := t.bridgeOfPort(i.Name); ok {
				pl.Bridge = b.Name
				if p.Tag != nil {
					pl.VLAN = *p.Tag
				}
			}
			plugged = append(plugged, pl)
		}
	}
	slices.SortFunc(plugged, func(a, b plug.Plugged) int { return strings.Compare(a.PortID, b.PortID) })
	return plugged, nil
}

// TapInUse reads what the switch holds under name: whether an interface of
// that name exists, its type, and the netshift port it was plugged for (the
// device side is the caller's, read with netlink).
func (s *Switch) TapInUse(ctx context.Context, name string) (plug.TapInUse, error) {
	i := vswitch.Interface{Name: name}
	if err := s.c.Get(ctx, &i); err != nil {
		if notFound(err) {
			return plug.TapInUse{}, nil
		}
		return plug.TapInUse{}, fmt.Errorf("%s: interface %s: %w", s.what, name, err)
	}
	return plug.TapInUse{InSwitch: true, Type: i.Type, PortID: i.ExternalIDs[extPortID]}, nil
}
