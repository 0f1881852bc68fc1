package ovs

import (
	"context"
	"fmt"
	"sort"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// PortBinding is where the southbound database has a logical port bound:
// the chassis ovn-controllers claimed it on, by name.
type PortBinding struct {
	// Found is false when there is no Port_Binding for the port (yet).
	Found bool
	// Main is the chassis the port is bound to ("" when none is); Additional
	// the others (a migration's target before it takes the port).
	Main       string
	Additional []string
	// Up is what the main chassis's ovn-controller reports: its flows are in.
	Up bool
}

// PortBinding reads a logical port's binding, with a select in one
// transaction rather than a copy of the whole table: a cluster's ports are
// many, and the operator needs one at a time.
func (s *Southbound) PortBinding(ctx context.Context, port string) (PortBinding, error) {
	c, err := s.get(ctx)
	if err != nil {
		return PortBinding{}, err
	}
	what := "read the binding of logical port " + port
	res, err := c.transact(ctx, what, []ovsdb.Operation{{Op: ovsdb.OperationSelect, Table: "Port_Binding",
		Where:   []ovsdb.Condition{{Column: "logical_port", Function: ovsdb.ConditionEqual, Value: port}},
		Columns: []string{"chassis", "additional_chassis", "up"}}})
	if err != nil {
		return PortBinding{}, err
	}
	if len(res) == 0 || len(res[0].Rows) == 0 {
		return PortBinding{}, nil
	}
	row := res[0].Rows[0]
	main, additional := uuidsOf(row["chassis"]), uuidsOf(row["additional_chassis"])
	names, err := s.chassisNames(ctx, c, append(append([]string(nil), main...), additional...))
	if err != nil {
		return PortBinding{}, fmt.Errorf("%s: %w", what, err)
	}
	b := PortBinding{Found: true}
	if len(main) > 0 {
		b.Main = names[main[0]]
	}
	for _, u := range additional {
		b.Additional = append(b.Additional, names[u])
	}
	sort.Strings(b.Additional)
	if up := optionalBool(row["up"]); len(up) > 0 {
		b.Up = up[0]
	}
	return b, nil
}

// chassisNames maps Chassis row UUIDs to their names.
func (s *Southbound) chassisNames(ctx context.Context, c *conn, uuids []string) (map[string]string, error) {
	names := map[string]string{}
	if len(uuids) == 0 {
		return names, nil
	}
	var ops []ovsdb.Operation
	for _, u := range uuids {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: "Chassis",
			Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: u}}}, Columns: []string{"name"}})
	}
	res, err := c.transact(ctx, "read chassis names", ops)
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		if len(r.Rows) > 0 {
			if n, ok := r.Rows[0]["name"].(string); ok {
				names[uuids[i]] = n
			}
		}
	}
	return names, nil
}

// uuidsOf reads a column of references: a single UUID or a set of them.
func uuidsOf(v any) []string {
	switch x := v.(type) {
	case ovsdb.UUID:
		return []string{x.GoUUID}
	case ovsdb.OvsSet:
		var out []string
		for _, e := range x.GoSet {
			if u, ok := e.(ovsdb.UUID); ok {
				out = append(out, u.GoUUID)
			}
		}
		return out
	}
	return nil
}

// optionalBool reads an optional boolean column: a bool, or a set of at most one.
func optionalBool(v any) []bool {
	switch x := v.(type) {
	case bool:
		return []bool{x}
	case ovsdb.OvsSet:
		var out []bool
		for _, e := range x.GoSet {
			if b, ok := e.(bool); ok {
				out = append(out, b)
			}
		}
		return out
	}
	return nil
}
