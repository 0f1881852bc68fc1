package neutrontest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"netshift.io/netshift/internal/prereq"
)

// Database is a private MariaDB server for one neutron-server: a data
// directory of its own and a unix socket, no TCP listener. On SQLite every
// writer takes one file lock, and under a burst of bulk creates, updates and
// ML2/OVN's port status reports neutron-server's processes fail each other's
// writes with "database is locked"; a database server is what Neutron runs on
// in a cloud, and it takes the same burst.
type Database struct {
	// Dir holds the data directory, the socket, the pid file and the log.
	Dir    string
	Socket string
}

// NewDatabase makes an empty MariaDB data directory under dir (created) and
// returns the database and the command that runs its server, not started: the
// caller owns the process, as with Command. A missing MariaDB is a
// *prereq.Missing.
func NewDatabase(ctx context.Context, dir string) (*Database, *exec.Cmd, error) {
	server, err := exec.LookPath("mariadbd")
	if err != nil {
		return nil, nil, &prereq.Missing{Reason: "mariadbd is not installed (apt-get install --no-install-recommends mariadb-server; hack/setup.sh does it)"}
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return nil, nil, &prereq.Missing{Reason: "mariadb-install-db is not installed (apt-get install --no-install-recommends mariadb-server)"}
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	// root without a password, over the socket only: nothing listens on TCP.
	initdb := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("mariadb-install-db in %s: %w: %s", data, err, lastLines(string(out), 5))
	}
	d := &Database{Dir: dir, Socket: filepath.Join(dir, "mysqld.sock")}
	cmd := exec.Command(server, "--no-defaults", "--datadir="+data, "--user=root",
		"--socket="+d.Socket, "--skip-networking", "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--log-error="+filepath.Join(dir, "mariadb.log"),
		// A lab's database: a commit is not flushed to disk, only written (a crash of
		// the machine may lose the last second; the lab does not outlive one).
		"--innodb-flush-log-at-trx-commit=2", "--innodb-buffer-pool-size=128M",
		// neutron-server's pools: up to 5 plus 50 overflow per process.
		"--max-connections=500")
	return d, cmd, nil
}

// URL is Neutron's database on the server, in SQLAlchemy's form.
func (d *Database) URL() string {
	return "mysql+pymysql://root@localhost/neutron?unix_socket=" + d.Socket + "&charset=utf8mb4"
}

// Prepare waits until the server answers on its socket (or exits, or the
// timeout or ctx ends), then creates Neutron's database and its schema.
func (d *Database) Prepare(ctx context.Context, exited <-chan error, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		out, err := d.sql(ctx, "CREATE DATABASE IF NOT EXISTS neutron CHARACTER SET utf8mb4")
		if err == nil {
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("mariadbd exited (%v); see %s", err, filepath.Join(d.Dir, "mariadb.log"))
		case <-deadline:
			return fmt.Errorf("mariadbd did not answer on %s within %s: %s", d.Socket, timeout, lastLines(out, 3))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return createSchema(ctx, d.URL())
}

func (d *Database) sql(ctx context.Context, statement string) (string, error) {
	out, err := exec.CommandContext(ctx, "mariadb", "--no-defaults", "--socket="+d.Socket, "--user=root", "-e", statement).CombinedOutput()
	return string(out), err
}
