// Package neutrontest runs a real neutron-server (Debian's package) with no
// Keystone and no message broker, for tests, benchmarks and the lab: on
// SQLite (one file, fine for the tests' own requests) or on a private
// MariaDB server (Database; what a burst of pods needs).
package neutrontest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"netshift.io/netshift/internal/prereq"
)

// Server is a running neutron-server.
type Server struct {
	// URL is its no-auth endpoint, http://127.0.0.1:PORT.
	URL string
	Dir string
	cmd *exec.Cmd
}

const config = `[DEFAULT]
bind_host = {{HOST}}
bind_port = {{PORT}}
auth_strategy = noauth
core_plugin = ml2
service_plugins = {{SERVICE_PLUGINS}}
transport_url = fake:/
api_workers = {{API_WORKERS}}
rpc_workers = 0
rpc_state_report_workers = 0
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
dhcp_agent_notification = false
state_path = {{DIR}}/state
api_paste_config = /etc/neutron/api-paste.ini
use_stderr = false
log_file = {{DIR}}/neutron-server.log
[database]
connection = {{DATABASE}}
[oslo_concurrency]
lock_path = {{DIR}}/lock
[oslo_messaging_notifications]
driver = noop
{{ML2}}`

// agentless is the ML2 section of a server without agents: ports stay DOWN
// and a host binding fails, which the pools' own tests do not need.
const agentless = `[ml2]
type_drivers = flat,vlan,vxlan,local
tenant_network_types = vxlan
mechanism_drivers = openvswitch
extension_drivers = port_security,tag_ports_during_bulk_creation
[ml2_type_flat]
flat_networks = *
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:200
[ml2_type_vxlan]
vni_ranges = 1:1000
`

// withOVN is the ML2 section of a server whose ports are OVN logical switch
// ports (ML2/OVN): it needs no broker and no agent, only the northbound and
// southbound databases. Neutron writes each port's logical switch port,
// ovn-controller binds it on the chassis whose switch has an interface with
// iface-id = the port's ID, and Neutron sets the port ACTIVE when OVN
// reports it up.
const withOVN = `[ml2]
type_drivers = geneve,flat,vlan,local
tenant_network_types = geneve
mechanism_drivers = ovn
extension_drivers = port_security,tag_ports_during_bulk_creation
[ml2_type_geneve]
vni_ranges = 1:65536
max_header_size = 38
[ml2_type_flat]
flat_networks = *
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:200
[ovn]
ovn_nb_connection = {{NB}}
ovn_sb_connection = {{SB}}
ovn_metadata_enabled = false
neutron_sync_mode = off
ovsdb_connection_timeout = 30
`

// Start runs a neutron-server without agents with its state in dir
// (created), on a free port, and waits until it answers. A missing
// neutron-server is a *prereq.Missing (tests skip, or fail under CI).
func Start(ctx context.Context, dir string) (*Server, error) {
	return start(ctx, dir, Settings{})
}

// StartOVN runs a neutron-server with ML2/OVN against the OVN northbound and
// southbound databases at nb and sb (OVSDB endpoints: unix:PATH or
// tcp:HOST:PORT), as Start does otherwise.
func StartOVN(ctx context.Context, dir, nb, sb string) (*Server, error) {
	return start(ctx, dir, Settings{NB: nb, SB: sb})
}

// Settings say where a server listens and which ML2 it runs.
type Settings struct {
	// Host and Port are where it listens (default 127.0.0.1 and a free port).
	Host string
	Port int
	// NB and SB, when set, make it ML2/OVN against those databases;
	// otherwise it runs without agents.
	NB, SB string
	// APIWorkers is how many API worker processes it runs (default 1).
	APIWorkers int
	// Database, when set, is its database (Database.URL, the schema
	// already made by Database.Prepare); otherwise a SQLite file in its
	// directory.
	Database string
}

// Command writes a server's configuration and empty database into dir
// (created) and returns the command that runs it, not started, and the URL
// it will answer on. The caller owns the process (a test ends it with
// itself, the lab keeps it past its own command).
func Command(ctx context.Context, dir string, st Settings) (*exec.Cmd, string, error) {
	bin, err := exec.LookPath("neutron-server")
	if err != nil {
		return nil, "", &prereq.Missing{Reason: "neutron-server is not installed (apt-get install --no-install-recommends neutron-server; hack/setup.sh does it)"}
	}
	// ML2/OVN's own L3 plugin: without it the driver's start fails looking for one.
	ml2, plugins := agentless, "trunk"
	if st.NB != "" || st.SB != "" {
		plugins = "trunk,ovn-router"
		if st.NB == "" || st.SB == "" {
			return nil, "", fmt.Errorf("neutron-server with ML2/OVN: both the northbound (%q) and southbound (%q) databases are needed", st.NB, st.SB)
		}
		ml2 = strings.NewReplacer("{{NB}}", st.NB, "{{SB}}", st.SB).Replace(withOVN)
	}
	if st.Host == "" {
		st.Host = "127.0.0.1"
	}
	if st.APIWorkers == 0 {
		st.APIWorkers = 1
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	for _, d := range []string{dir, filepath.Join(dir, "state"), filepath.Join(dir, "lock")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, "", err
		}
	}
	database := st.Database
	if database == "" {
		file := filepath.Join(dir, "neutron.db")
		if err := schema(ctx, file); err != nil {
			return nil, "", err
		}
		if err := writeAheadLog(ctx, file); err != nil {
			return nil, "", err
		}
		database = "sqlite:///" + file + "?timeout=30"
	}
	if st.Port == 0 {
		if st.Port, err = freePort(); err != nil {
			return nil, "", err
		}
	}
	conf := strings.NewReplacer("{{HOST}}", st.Host, "{{PORT}}", fmt.Sprint(st.Port), "{{DIR}}", dir, "{{DATABASE}}", database, "{{API_WORKERS}}", fmt.Sprint(st.APIWorkers), "{{ML2}}", ml2, "{{SERVICE_PLUGINS}}", plugins).Replace(config)
	confPath := filepath.Join(dir, "neutron.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, "", err
	}
	return exec.Command(bin, "--config-file", confPath), fmt.Sprintf("http://%s", net.JoinHostPort(st.Host, fmt.Sprint(st.Port))), nil
}

func start(ctx context.Context, dir string, st Settings) (*Server, error) {
	cmd, url, err := Command(ctx, dir, st)
	if err != nil {
		return nil, err
	}
	dir, _ = filepath.Abs(dir)
	out, err := os.Create(filepath.Join(dir, "neutron-server.out"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: neutron-server forks workers, and Stop ends them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start neutron-server: %w", err)
	}
	s := &Server{URL: url, Dir: dir, cmd: cmd}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := WaitReady(ctx, url, exited, 90*time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w; see %s and %s", err, out.Name(), filepath.Join(dir, "neutron-server.log"))
	}
	return s, nil
}

// WaitReady waits until the server at url answers, it exits (exited), or
// the timeout or ctx ends.
func WaitReady(ctx context.Context, url string, exited <-chan error, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		resp, err := http.Get(url + "/v2.0/networks")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("neutron-server exited (%v)", err)
		case <-deadline:
			return fmt.Errorf("neutron-server did not answer on %s within %s", url, timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop ends the server and its workers.
func (s *Server) Stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	for i := 0; i < 50; i++ {
		if syscall.Kill(-s.cmd.Process.Pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// schema writes an empty Neutron database at path: a copy of a pristine one
// made once per machine (neutron-db-manage does not work on SQLite; the
// models' metadata does, in about 6 s).
func schema(ctx context.Context, path string) error {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	pristine := filepath.Join(cache, "netshift", "neutron", "schema-"+neutronVersion()+".sqlite")
	if _, err := os.Stat(pristine); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(pristine), 0o700); err != nil {
			return err
		}
		tmp := pristine + fmt.Sprintf(".%d", os.Getpid())
		if err := createSchema(ctx, "sqlite:///"+tmp); err != nil {
			os.Remove(tmp)
			return err
		}
		if err := os.Rename(tmp, pristine); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(pristine)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// createSchema makes Neutron's tables in the database at url (SQLAlchemy's
// form) from its models' metadata: neutron-db-manage's migrations do not run
// on SQLite, and the models make the same head schema on either database.
func createSchema(ctx context.Context, url string) error {
	script := "import sqlalchemy as sa, sys; from neutron.db.migration.models import head; head.get_metadata().create_all(sa.create_engine(sys.argv[1]))"
	if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", script, url).CombinedOutput(); err != nil {
		return fmt.Errorf("create the Neutron schema: %w: %s", err, lastLines(string(out), 5))
	}
	return nil
}

// writeAheadLog puts the database at path in SQLite's write-ahead-log mode
// (kept in the file): neutron-server's processes (its API worker, ML2/OVN's
// maintenance and OVSDB monitor) then read while one writes, instead of
// failing each other's transactions with "database is locked".
func writeAheadLog(ctx context.Context, path string) error {
	script := "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); c.close()"
	if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", script, path).CombinedOutput(); err != nil {
		return fmt.Errorf("the Neutron database's write-ahead log: %w: %s", err, lastLines(string(out), 5))
	}
	return nil
}

func neutronVersion() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "neutron-server").Output()
	if err != nil || len(out) == 0 {
		return "unknown"
	}
	return strings.NewReplacer(":", "_", "/", "_").Replace(string(out))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
