package ovs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// txTimeout bounds one transaction, as ovs-vsctl's --timeout did.
const txTimeout = 10 * time.Second

// conn is one long-lived OVSDB connection: a monitor keeps its cache of the
// tables and columns it watches current, reads come from that cache, and
// writes are transactions built in code. It reconnects (and monitors again)
// by itself when the server goes away.
type conn struct {
	// what names the database in errors: "OVSDB unix:/run/openvswitch/db.sock".
	what string
	c    client.Client
}

// dial connects to endpoint (unix:PATH, tcp:HOST:PORT, or ssl:HOST:PORT with
// creds) and monitors the tables asked for; it returns once the cache holds
// their current rows.
func dial(ctx context.Context, what, endpoint string, creds *TLS, db model.ClientDBModel, tables ...client.MonitorOption) (*conn, error) {
	logger := log.FromContext(ctx).WithName("ovsdb").WithValues("database", db.Name(), "endpoint", endpoint)
	// libovsdb logs every update at V(5) and its reconnects at V(3): quiet unless asked.
	quiet := logger.V(2)
	l := logr.New(quiet.GetSink())
	if !quiet.Enabled() {
		l = logr.Discard()
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, 5*time.Second, 0
	opts := []client.Option{client.WithEndpoint(endpoint), client.WithReconnect(txTimeout, b), client.WithLogger(&l)}
	if IsSSL(endpoint) {
		if creds == nil {
			return nil, fmt.Errorf("%s: an ssl: endpoint needs a client certificate, its key and a CA", what)
		}
		// One config for every reconnect: it reads the files at each handshake.
		opts = append(opts, client.WithTLSConfig(creds.config()))
	}
	c, err := client.NewOVSDBClient(db, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("%s: connect: %w", what, err)
	}
	if len(tables) > 0 {
		if _, err := c.Monitor(ctx, c.NewMonitor(tables...)); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: monitor: %w", what, err)
		}
	}
	return &conn{what: what, c: c}, nil
}

// close ends the connection.
func (c *conn) close() { c.c.Close() }

// transact commits ops as one transaction; what says what it does, for the error.
func (c *conn) transact(ctx context.Context, what string, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	res, err := c.c.Transact(ctx, ops...)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.what, what, err)
	}
	if opErrs, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		// Each failed operation's own error says why (and is what callers test for).
		for _, e := range opErrs {
			err = fmt.Errorf("%w; %w", err, e)
		}
		return nil, fmt.Errorf("%s: %s: %w", c.what, what, err)
	}
	return res, nil
}

// reachable checks that the server answers now.
func (c *conn) reachable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	if err := c.c.Echo(ctx); err != nil {
		return fmt.Errorf("%s: not answering: %w", c.what, err)
	}
	return nil
}

// list reads every cached row of a table into result (a pointer to a slice of models).
func (c *conn) list(ctx context.Context, result any) error {
	if err := c.c.List(ctx, result); err != nil {
		return fmt.Errorf("%s: read cache: %w", c.what, err)
	}
	return nil
}

// setKeys are the mutations that set keys of a map column (options,
// external_ids) and remove others, leaving the rest of the map as it is: a
// delete of every key named, then an insert of the new values, in one
// operation (an insert alone never overwrites a key that is there).
func setKeys(column any, set map[string]string, remove ...string) []model.Mutation {
	var m []model.Mutation
	if drop := append(slices.Sorted(maps.Keys(set)), remove...); len(drop) > 0 {
		m = append(m, model.Mutation{Field: column, Mutator: ovsdb.MutateOperationDelete, Value: drop})
	}
	if len(set) > 0 {
		m = append(m, model.Mutation{Field: column, Mutator: ovsdb.MutateOperationInsert, Value: set})
	}
	return m
}

// notFound says whether err is a lookup of a row that is not there.
func notFound(err error) bool { return errors.Is(err, client.ErrNotFound) }
