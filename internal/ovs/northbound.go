package ovs

import (
	"context"
	"fmt"
	"sort"
)

// Northbound is an OVN northbound database, reached with ovn-nbctl.
type Northbound struct {
	DB string // unix:PATH or tcp:HOST:PORT
}

func (n Northbound) nbctl(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "OVN northbound "+n.DB, "ovn-nbctl", append([]string{"--db=" + n.DB, "--timeout=10"}, args...))
}

// PortOptions reads a logical switch port's options; false when there is no such port.
func (n Northbound) PortOptions(ctx context.Context, port string) (map[string]string, bool, error) {
	opts, _, ok, err := n.Port(ctx, port)
	return opts, ok, err
}

// Port reads a logical switch port's options and external_ids (who it
// belongs to); ok is false when there is no such port.
func (n Northbound) Port(ctx context.Context, port string) (options, ids map[string]string, ok bool, err error) {
	out, err := n.nbctl(ctx, "--format=json", "--columns=options,external_ids", "find", "logical_switch_port", "name="+port)
	if err != nil {
		return nil, nil, false, err
	}
	tables, err := decodeTables(out)
	if err != nil || len(tables) != 1 {
		return nil, nil, false, fmt.Errorf("OVN northbound %s: logical switch port %s: unexpected answer (%v)", n.DB, port, err)
	}
	if len(tables[0]) == 0 {
		return nil, nil, false, nil
	}
	row := tables[0][0]
	if len(row) != 2 {
		return nil, nil, false, fmt.Errorf("OVN northbound %s: logical switch port %s: %d columns, want options and external_ids", n.DB, port, len(row))
	}
	return externalIDs(row[0]), externalIDs(row[1]), true, nil
}

// SetPortOptions sets and removes options of a logical switch port in one transaction.
func (n Northbound) SetPortOptions(ctx context.Context, port string, set map[string]string, remove []string) error {
	var args []string
	if len(set) > 0 {
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		args = append(args, "set", "logical_switch_port", port)
		for _, k := range keys {
			args = append(args, fmt.Sprintf("options:%s=%q", k, set[k]))
		}
	}
	for _, k := range remove {
		if len(args) > 0 {
			args = append(args, "--")
		}
		args = append(args, "remove", "logical_switch_port", port, "options", k)
	}
	if len(args) == 0 {
		return nil
	}
	_, err := n.nbctl(ctx, args...)
	return err
}
