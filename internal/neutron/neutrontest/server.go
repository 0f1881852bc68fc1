// Package neutrontest runs a real neutron-server (Debian's package) with no
// Keystone, SQLite and no message broker, for tests and benchmarks: the
// configuration measured in shared/notes/real-components.md §3.
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
bind_host = 127.0.0.1
bind_port = {{PORT}}
auth_strategy = noauth
core_plugin = ml2
service_plugins = trunk
transport_url = fake:/
api_workers = 1
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
connection = sqlite:///{{DIR}}/neutron.db
[oslo_concurrency]
lock_path = {{DIR}}/lock
[oslo_messaging_notifications]
driver = noop
[ml2]
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

// Start runs a neutron-server with its state in dir (created), on a free
// port, and waits until it answers. A missing neutron-server is a
// *prereq.Missing (tests skip, or fail under CI).
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := exec.LookPath("neutron-server")
	if err != nil {
		return nil, &prereq.Missing{Reason: "neutron-server is not installed (apt-get install --no-install-recommends neutron-server; hack/setup.sh does it)"}
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{dir, filepath.Join(dir, "state"), filepath.Join(dir, "lock")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := schema(ctx, filepath.Join(dir, "neutron.db")); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := strings.NewReplacer("{{PORT}}", fmt.Sprint(port), "{{DIR}}", dir).Replace(config)
	confPath := filepath.Join(dir, "neutron.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "neutron-server.out"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin, "--config-file", confPath)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: neutron-server forks workers, and Stop ends them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start neutron-server: %w", err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Dir: dir, cmd: cmd}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(90 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/v2.0/networks")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("neutron-server exited (%v); see %s and %s", err, out.Name(), filepath.Join(dir, "neutron-server.log"))
		case <-deadline:
			s.Stop()
			return nil, fmt.Errorf("neutron-server did not answer on %s within 90 s; see %s", s.URL, filepath.Join(dir, "neutron-server.log"))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
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
		script := "import sqlalchemy as sa, sys; from neutron.db.migration.models import head; head.get_metadata().create_all(sa.create_engine('sqlite:///' + sys.argv[1]))"
		if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", script, tmp).CombinedOutput(); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("create the Neutron schema: %w: %s", err, lastLines(string(out), 5))
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
