package ovs

import (
	"context"
	"fmt"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"

	"netshift.io/netshift/internal/ovs/model/nb"
)

// Northbound is an OVN northbound database: netshift reads and sets logical
// switch ports' options (the chassis a port is bound to) and reads whose
// port is (its external_ids).
type Northbound struct {
	// DB is the endpoint: unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT.
	DB string
	// TLS is what an ssl: endpoint is reached with.
	TLS *TLS
	lazyConn
}

// NewNorthbound returns the northbound database at endpoint; it connects on
// first use (as does a Northbound with only DB set).
func NewNorthbound(endpoint string) *Northbound { return &Northbound{DB: endpoint} }

func (n *Northbound) get(ctx context.Context) (*conn, error) {
	return n.lazyConn.get(ctx, func(ctx context.Context) (*conn, error) {
		db, err := model.NewClientDBModel(nb.Schema().Name, map[string]model.Model{nb.LogicalSwitchPortTable: &nb.LogicalSwitchPort{}})
		if err != nil {
			return nil, err
		}
		var p nb.LogicalSwitchPort
		return dial(ctx, "OVN northbound "+n.DB, n.DB, n.TLS, db, client.WithTable(&p, &p.Name, &p.Options, &p.ExternalIDs))
	})
}

// Port reads a logical switch port's options and external_ids (who it
// belongs to); ok is false when there is no such port.
func (n *Northbound) Port(ctx context.Context, port string) (options, ids map[string]string, ok bool, err error) {
	c, err := n.get(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	p := nb.LogicalSwitchPort{Name: port}
	if err := c.c.Get(ctx, &p); err != nil {
		if notFound(err) {
			return nil, nil, false, nil
		}
		return nil, nil, false, fmt.Errorf("%s: logical switch port %s: %w", c.what, port, err)
	}
	return p.Options, p.ExternalIDs, true, nil
}

// PortOptions reads a logical switch port's options; false when there is no such port.
func (n *Northbound) PortOptions(ctx context.Context, port string) (map[string]string, bool, error) {
	opts, _, ok, err := n.Port(ctx, port)
	return opts, ok, err
}

// SetPortOptions sets and removes options of a logical switch port in one
// transaction, leaving its other options as they are.
func (n *Northbound) SetPortOptions(ctx context.Context, port string, set map[string]string, remove []string) error {
	c, err := n.get(ctx)
	if err != nil {
		return err
	}
	p := nb.LogicalSwitchPort{Name: port}
	mutations := setKeys(&p.Options, set, remove...)
	if len(mutations) == 0 {
		return nil
	}
	what := fmt.Sprintf("logical switch port %s: set options %v, remove %v", port, set, remove)
	ops, err := c.c.Where(&p).Mutate(&p, mutations...)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.what, what, err)
	}
	res, err := c.transact(ctx, what, ops)
	if err == nil && len(res) > 0 && res[0].Count == 0 {
		return fmt.Errorf("%s: %s: no such port", c.what, what)
	}
	return err
}
