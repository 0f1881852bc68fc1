// Package ovsmem serves an Open_vSwitch database from memory with libovsdb's
// own server: the ovs package's transactions and cache are tested against it
// in the unit tier, with no root, no ovsdb-server and no ovs-vswitchd (so no
// ofports are ever assigned). The same behaviour is tested against the real
// daemons in the integration tier.
package ovsmem

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/database/inmemory"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
	"github.com/ovn-org/libovsdb/server"

	"netshift.io/netshift/internal/ovs/model/nb"
	"netshift.io/netshift/internal/ovs/model/sb"
	"netshift.io/netshift/internal/ovs/model/vswitch"
)

// StartSwitch serves an Open_vSwitch database holding what a node's switch
// has before netshift touches it: the Open_vSwitch row and the integration
// bridge br-int (with its internal port). It returns the endpoint, unix:PATH;
// the server stops when the test ends.
func StartSwitch(t testing.TB) string {
	t.Helper()
	return StartSwitchWith(t, nil)
}

// StartSwitchWith is StartSwitch with more of the root row's external_ids
// (a node's ovn-remote, as ovnkube-node sets it).
func StartSwitchWith(t testing.TB, externalIDs map[string]string) string {
	t.Helper()
	full, err := vswitch.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := serve(t, vswitch.Schema(), full)
	iface := vswitch.Interface{UUID: "iface", Name: "br-int", Type: "internal"}
	port := vswitch.Port{UUID: "port", Name: "br-int", Interfaces: []string{"iface"}}
	br := vswitch.Bridge{UUID: "br", Name: "br-int", Ports: []string{"port"}}
	ids := map[string]string{"system-id": "node-1"}
	for k, v := range externalIDs {
		ids[k] = v
	}
	root := vswitch.OpenvSwitch{UUID: "root", Bridges: []string{"br"}, ExternalIDs: ids}
	Insert(t, endpoint, full, &iface, &port, &br, &root)
	return endpoint
}

// StartNorthbound serves an empty OVN_Northbound database.
func StartNorthbound(t testing.TB) string {
	t.Helper()
	full, err := nb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, nb.Schema(), full)
}

// StartSouthbound serves an empty OVN_Southbound database.
func StartSouthbound(t testing.TB) string {
	t.Helper()
	full, err := sb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, sb.Schema(), full)
}

// serve runs libovsdb's server for one database on a unix socket of the test's.
func serve(t testing.TB, schema ovsdb.DatabaseSchema, full model.ClientDBModel) string {
	t.Helper()
	dbModel, errs := model.NewDatabaseModel(schema, full)
	if len(errs) > 0 {
		t.Fatalf("model: %v", errs)
	}
	srv, err := server.NewOvsdbServer(inmemory.NewDatabase(map[string]model.ClientDBModel{schema.Name: full}), dbModel)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "db.sock")
	go func() { _ = srv.Serve("unix", sock) }()
	t.Cleanup(srv.Close)
	for deadline := time.Now().Add(5 * time.Second); !srv.Ready(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the in-memory OVSDB server did not start")
		}
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	return "unix:" + sock
}

// quiet keeps libovsdb's own logging (every cache update) out of test output.
var quiet = logr.Discard()

// Client is a plain libovsdb client of the database, as its other writers
// and a test's own reads use one, connected (and closed when the test ends).
func Client(t testing.TB, endpoint string, full model.ClientDBModel) client.Client {
	t.Helper()
	c, err := client.NewOVSDBClient(full, client.WithEndpoint(endpoint), client.WithLogger(&quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Insert creates rows in one transaction, as the database's other writers
// would (ovs-vsctl, ovn-northd, a chassis's ovn-controller).
func Insert(t testing.TB, endpoint string, full model.ClientDBModel, rows ...model.Model) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := Client(t, endpoint, full)
	defer c.Close()
	ops, err := c.Create(rows...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		t.Fatalf("insert into the in-memory database: %v", err)
	}
}
