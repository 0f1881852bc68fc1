package ovstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/testenv"
)

// Northbound is a real OVN northbound database (an ovsdb-server with the OVN
// NB schema; no ovn-northd).
type Northbound struct {
	ovs.Northbound
	t testing.TB
}

// StartNorthbound runs one until the test ends. It skips the test (fails it
// under CI=true) without OVN.
func StartNorthbound(t testing.TB) *Northbound {
	t.Helper()
	return &Northbound{Northbound: ovs.Northbound{DB: startOVNDB(t, "nb")}, t: t}
}

// Southbound is a real OVN southbound database (an ovsdb-server with the OVN
// SB schema; no ovn-northd, no ovn-controller: the test writes its rows).
type Southbound struct {
	ovs.Southbound
	t testing.TB
}

// StartSouthbound runs one until the test ends, as StartNorthbound does.
func StartSouthbound(t testing.TB) *Southbound {
	t.Helper()
	return &Southbound{Southbound: ovs.Southbound{DB: startOVNDB(t, "sb")}, t: t}
}

// Sbctl runs ovn-sbctl on it.
func (s *Southbound) Sbctl(args ...string) string {
	s.t.Helper()
	return ovnctl(s.t, "ovn-sbctl", s.DB, args)
}

// startOVNDB serves a fresh OVN database of the schema ("nb" or "sb") until
// the test ends and returns its endpoint.
func startOVNDB(t testing.TB, which string) string {
	t.Helper()
	schema := "/usr/share/ovn/ovn-" + which + ".ovsschema"
	if _, err := os.Stat(schema); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "OVN is not installed (apt-get install ovn-central; hack/setup.sh does it)"})
	}
	dir := t.TempDir()
	file, sock, pid := filepath.Join(dir, which+".db"), filepath.Join(dir, which+".sock"), filepath.Join(dir, which+".pid")
	for _, args := range [][]string{
		{"ovsdb-tool", "create", file, schema},
		{"ovsdb-server", file, "--remote=punix:" + sock, "--pidfile=" + pid, "--unixctl=" + filepath.Join(dir, which+".ctl"),
			"--log-file=" + filepath.Join(dir, which+".log"), "--detach"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		data, _ := os.ReadFile(pid)
		var p int
		if _, err := fmt.Sscan(string(data), &p); err == nil && p > 0 {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(comm)) == "ovsdb-server" {
				if proc, err := os.FindProcess(p); err == nil {
					_ = proc.Kill()
				}
			}
		}
	})
	return "unix:" + sock
}

// Nbctl runs ovn-nbctl on it.
func (n *Northbound) Nbctl(args ...string) string {
	n.t.Helper()
	return ovnctl(n.t, "ovn-nbctl", n.DB, args)
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
