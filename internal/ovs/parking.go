package ovs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"netshift.io/netshift/internal/ovs/model/vswitch"
	"netshift.io/netshift/internal/plug"
)

// ErrPlugChanged is a parking transaction refused because the port's plug
// is no longer what it was read as: unplugged, adopted or parked anew by
// another process meanwhile.
var ErrPlugChanged = errors.New("the port's plug changed meanwhile")

func parkedAt(ext map[string]string) time.Time {
	s, err := strconv.ParseInt(ext[extParkedAt], 10, 64)
	if err != nil || s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0)
}

// ownerRow is the table and UUID of the row that carries a plug's owner:
// the port bridge in per-port mode, the tap's interface in direct mode.
func (t tables) ownerRow(pl plug.Plugged) (table, uuid string, ok bool) {
	switch pl.Mode {
	case plug.PerPort:
		b, found := t.bridges[plug.NamesFor(pl.PortID).Bridge]
		return vswitch.BridgeTable, b.UUID, found
	case plug.Direct:
		for _, i := range t.ifaces {
			if i.Name == pl.Tap && i.ExternalIDs[extPortID] == pl.PortID {
				return vswitch.InterfaceTable, i.UUID, true
			}
		}
	}
	return "", "", false
}

// expect adds a wait operation that aborts the transaction unless the row
// still carries the external_ids ids.
func (x *txn) expect(table, uuid string, ids map[string]string) {
	m, err := ovsdb.NewOvsMap(ids)
	if err != nil {
		x.add(nil, err)
		return
	}
	zero := 0
	row := ovsdb.UUID{GoUUID: uuid}
	x.add([]ovsdb.Operation{{Op: ovsdb.OperationWait, Table: table, Timeout: &zero, Until: string(ovsdb.WaitConditionEqual),
		Where:   []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: row}, {Column: "external_ids", Function: ovsdb.ConditionIncludes, Value: m}},
		Columns: []string{"_uuid"}, Rows: []ovsdb.Row{{"_uuid": row}}}}, nil)
}

// Park marks a pod's plug of a port parked at at: the port and its device
// stay as they are, nobody's, for the next pod its pool hands the port to
// (plug.Parked). It is refused with ErrPlugChanged unless the port is still
// plugged for pl.Owner.
func (s *Switch) Park(ctx context.Context, pl plug.Plugged, at time.Time) error {
	what := fmt.Sprintf("park port %s (%s) of %s", pl.PortID, pl.Mode, pl.Owner)
	t, err := s.tables(ctx)
	if err != nil {
		return err
	}
	table, uuid, ok := t.ownerRow(pl)
	if !ok || pl.Owner == "" {
		return fmt.Errorf("%s: %s: %w", what, s.what, ErrPlugChanged)
	}
	x := &txn{s: s}
	x.expect(table, uuid, map[string]string{extPortID: pl.PortID, extOwner: pl.Owner})
	mark := map[string]string{extParkedAt: strconv.FormatInt(at.Unix(), 10)}
	if table == vswitch.BridgeTable {
		row := vswitch.Bridge{UUID: uuid}
		setRowKeys(x, &row, &row.ExternalIDs, mark, extOwner)
	} else {
		row := vswitch.Interface{UUID: uuid}
		setRowKeys(x, &row, &row.ExternalIDs, mark, extOwner)
	}
	return s.commitParking(ctx, what, x)
}

// UnplugParked unplugs a parked port as Unplug does, in one transaction
// refused with ErrPlugChanged unless the port is still parked since
// pl.ParkedAt: a pod that adopted it meanwhile keeps it.
func (s *Switch) UnplugParked(ctx context.Context, pl plug.Plugged, integration string) error {
	what := fmt.Sprintf("unplug parked port %s (%s)", pl.PortID, pl.Mode)
	if !pl.Parked() {
		return fmt.Errorf("%s: not parked", what)
	}
	t, err := s.tables(ctx)
	if err != nil {
		return err
	}
	table, uuid, ok := t.ownerRow(pl)
	if !ok {
		return fmt.Errorf("%s: %s: %w", what, s.what, ErrPlugChanged)
	}
	x := &txn{s: s}
	x.expect(table, uuid, map[string]string{extPortID: pl.PortID, extParkedAt: strconv.FormatInt(pl.ParkedAt.Unix(), 10)})
	x.unplug(t, pl, integration)
	return s.commitParking(ctx, what, x)
}

func (s *Switch) commitParking(ctx context.Context, what string, x *txn) error {
	if x.err != nil {
		return fmt.Errorf("%s: %s: %w", what, s.what, x.err)
	}
	_, err := s.commit(ctx, what, x.ops)
	var changed *ovsdb.TimedOut
	if errors.As(err, &changed) {
		return fmt.Errorf("%s: %s: %w", what, s.what, ErrPlugChanged)
	}
	return err
}
