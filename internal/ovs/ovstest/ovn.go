package ovstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/internal/ovs"
)

// Northbound is a real OVN northbound database (an ovsdb-server with the OVN
// NB schema; no ovn-northd).
type Northbound struct {
	ovs.Northbound
	*Server
}

// StartNorthbound runs one until the test ends. It skips the test (fails it
// under CI=true) without OVN.
func StartNorthbound(t testing.TB) *Northbound {
	t.Helper()
	s := startOVNDB(t, "nb", nil)
	return &Northbound{Northbound: ovs.Northbound{DB: s.Socket}, Server: s}
}

// StartNorthboundSSL runs one that also serves ssl:127.0.0.1:PORT with
// the files of ssl; its DB is that endpoint, and its TLS is for the test to
// set (Nbctl goes through the unix socket).
func StartNorthboundSSL(t testing.TB, ssl SSL) *Northbound {
	t.Helper()
	s := startOVNDB(t, "nb", &ssl)
	return &Northbound{Northbound: ovs.Northbound{DB: s.SSL}, Server: s}
}

// Southbound is a real OVN southbound database (an ovsdb-server with the OVN
// SB schema; no ovn-northd, no ovn-controller: the test writes its rows).
type Southbound struct {
	ovs.Southbound
	*Server
}

// StartSouthbound runs one until the test ends, as StartNorthbound does.
func StartSouthbound(t testing.TB) *Southbound {
	t.Helper()
	s := startOVNDB(t, "sb", nil)
	return &Southbound{Southbound: ovs.Southbound{DB: s.Socket}, Server: s}
}

// StartSouthboundSSL runs one that also serves ssl:, as StartNorthboundSSL does.
func StartSouthboundSSL(t testing.TB, ssl SSL) *Southbound {
	t.Helper()
	s := startOVNDB(t, "sb", &ssl)
	return &Southbound{Southbound: ovs.Southbound{DB: s.SSL}, Server: s}
}

// Sbctl runs ovn-sbctl on it.
func (s *Southbound) Sbctl(args ...string) string {
	s.t.Helper()
	return ovnctl(s.t, "ovn-sbctl", s.Socket, args)
}

// Nbctl runs ovn-nbctl on it.
func (n *Northbound) Nbctl(args ...string) string {
	n.t.Helper()
	return ovnctl(n.t, "ovn-nbctl", n.Socket, args)
}

// SSL is what a database serves pssl: with (PEM files): its certificate and
// key, and the CA whose certificates it accepts from clients (ovsdb-server
// asks every client for one).
type SSL struct{ Key, Cert, CA string }

// Server is one running ovsdb-server of an OVN database.
type Server struct {
	// Socket is its unix socket endpoint, unix:PATH.
	Socket string
	// SSL is its ssl:127.0.0.1:PORT endpoint, when it serves one.
	SSL                   string
	t                     testing.TB
	dir, which, file, pid string
}

// startOVNDB serves a fresh OVN database of the schema ("nb" or "sb") until
// the test ends, and over SSL too with ssl.
func startOVNDB(t testing.TB, which string, ssl *SSL) *Server {
	t.Helper()
	dist := useDist(t)
	schema := dist.Schema("ovn-" + which)
	dir := t.TempDir()
	s := &Server{t: t, dir: dir, which: which, file: filepath.Join(dir, which+".db"), pid: filepath.Join(dir, which+".pid"),
		Socket: "unix:" + filepath.Join(dir, which+".sock")}
	if out, err := exec.Command("ovsdb-tool", "create", s.file, schema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create %s: %v\n%s", s.file, err, out)
	}
	if ssl != nil {
		s.SSL = "ssl:" + freeLocalPort(t)
	}
	t.Cleanup(s.stop)
	s.start(ssl)
	return s
}

// start runs ovsdb-server on the database file, on the unix socket and, with
// ssl, on the SSL endpoint; it returns once the SSL endpoint accepts.
func (s *Server) start(ssl *SSL) {
	s.t.Helper()
	args := []string{s.file, "--remote=punix:" + strings.TrimPrefix(s.Socket, "unix:"), "--pidfile=" + s.pid,
		"--unixctl=" + filepath.Join(s.dir, s.which+".ctl"), "--log-file=" + filepath.Join(s.dir, s.which+".log"), "--detach"}
	if ssl != nil {
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.SSL, "ssl:"))
		args = append(args, "--private-key="+ssl.Key, "--certificate="+ssl.Cert, "--ca-cert="+ssl.CA, "--remote=pssl:"+port+":127.0.0.1")
	}
	if out, err := exec.Command("ovsdb-server", args...).CombinedOutput(); err != nil {
		s.t.Fatalf("ovsdb-server %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if s.SSL == "" {
		return
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.SSL, "ssl:"), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(end) {
			s.t.Fatalf("ovsdb-server does not listen on %s: %v", s.SSL, err)
		}
	}
}

// RestartSSL stops the server and starts it again on the same database and
// endpoints with other SSL files, as a rotation of its certificates does;
// its clients are disconnected and reconnect by themselves.
func (s *Server) RestartSSL(ssl SSL) {
	s.t.Helper()
	s.stop()
	s.start(&ssl)
}

// Log is what the server logged.
func (s *Server) Log() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, s.which+".log"))
	return string(data)
}

// stop kills the server, if it is still the one started, and waits until it is gone.
func (s *Server) stop() {
	data, _ := os.ReadFile(s.pid)
	var p int
	if _, err := fmt.Sscan(string(data), &p); err != nil || p <= 0 {
		return
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(comm)) != "ovsdb-server" {
		return
	}
	if proc, err := os.FindProcess(p); err == nil {
		_ = proc.Kill()
	}
	for range 250 { // gone, or a zombie nobody reaps
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = os.Remove(s.pid)
}

// freeLocalPort is a TCP port on 127.0.0.1 nothing listens on now.
func freeLocalPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ovnctl runs an OVN client (ovn-nbctl, ovn-sbctl) on db and fails the test
// if it fails.
func ovnctl(t testing.TB, tool, db string, args []string) string {
	t.Helper()
	out, err := exec.Command(tool, append([]string{"--db=" + db, "--timeout=10"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
