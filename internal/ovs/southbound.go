package ovs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"netshift.io/netshift/internal/ovs/model/sb"
)

// DefaultGenevePort is the port a Geneve Encap record without options:dst_port uses.
const DefaultGenevePort = 6081

// Southbound is an OVN southbound database: netshift reads and sets the
// Geneve Encap records' destination port, which every ovn-controller builds
// its tunnels from.
type Southbound struct {
	// DB is the endpoint: unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT.
	DB string
	// TLS is what an ssl: endpoint is reached with.
	TLS *TLS
	lazyConn
}

// NewSouthbound returns the southbound database at endpoint; it connects on
// first use (as does a Southbound with only DB set).
func NewSouthbound(endpoint string) *Southbound { return &Southbound{DB: endpoint} }

func (s *Southbound) get(ctx context.Context) (*conn, error) {
	return s.lazyConn.get(ctx, func(ctx context.Context) (*conn, error) {
		db, err := model.NewClientDBModel(sb.Schema().Name, map[string]model.Model{sb.EncapTable: &sb.Encap{}})
		if err != nil {
			return nil, err
		}
		var e sb.Encap
		return dial(ctx, "OVN southbound "+s.DB, s.DB, s.TLS, db, client.WithTable(&e, &e.Type, &e.Options, &e.ChassisName))
	})
}

// Encap is one Geneve Encap record.
type Encap struct {
	UUID    string
	Chassis string
	// DstPort is options:dst_port, 0 when unset (DefaultGenevePort).
	DstPort int
}

// GeneveEncaps lists the Geneve Encap records, in UUID order.
func (s *Southbound) GeneveEncaps(ctx context.Context) ([]Encap, error) {
	c, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	if !c.c.Connected() {
		// Its cache would be waited for until ctx ends, and then read stale.
		return nil, fmt.Errorf("%s: not connected (reconnecting)", c.what)
	}
	var rows []sb.Encap
	if err := c.list(ctx, &rows); err != nil {
		return nil, err
	}
	var out []Encap
	for _, r := range rows {
		if r.Type != sb.EncapTypeGeneve {
			continue
		}
		e := Encap{UUID: r.UUID, Chassis: r.ChassisName}
		if v, ok := r.Options["dst_port"]; ok {
			if e.DstPort, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("%s: Encap %s of chassis %s: options:dst_port %q: %w", c.what, r.UUID, r.ChassisName, v, err)
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Encap) int { return strings.Compare(a.UUID, b.UUID) })
	return out, nil
}

// SetEncapPort sets options:dst_port of the given Encap records (every
// Geneve record when uuids is nil) in ONE transaction: the whole cluster
// moves to the new port at once. The default port removes the option, so
// that nothing names a port once it is the default again (ovnkube-node writes
// its own record's only when it is not the default). It returns how many
// records it set.
func (s *Southbound) SetEncapPort(ctx context.Context, port int, uuids []string) (int, error) {
	c, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	if uuids == nil {
		records, err := s.GeneveEncaps(ctx)
		if err != nil {
			return 0, err
		}
		for _, r := range records {
			uuids = append(uuids, r.UUID)
		}
		if len(uuids) == 0 {
			return 0, fmt.Errorf("%s: no Geneve Encap record", c.what)
		}
	}
	what := fmt.Sprintf("set Encap dst_port %d on %d record(s)", port, len(uuids))
	var ops []ovsdb.Operation
	for _, u := range uuids {
		e := sb.Encap{UUID: u}
		mutations := setKeys(&e.Options, map[string]string{"dst_port": strconv.Itoa(port)})
		if port == DefaultGenevePort {
			mutations = setKeys(&e.Options, nil, "dst_port")
		}
		o, err := c.c.Where(&e).Mutate(&e, mutations...)
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %w", c.what, what, err)
		}
		ops = append(ops, o...)
	}
	if _, err := c.transact(ctx, what, ops); err != nil {
		return 0, err
	}
	return len(uuids), nil
}
