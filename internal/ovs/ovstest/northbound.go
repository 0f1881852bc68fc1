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
	if _, err := os.Stat("/usr/share/ovn/ovn-nb.ovsschema"); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "OVN is not installed (apt-get install ovn-central; hack/setup.sh does it)"})
	}
	dir := t.TempDir()
	file, sock, pid := filepath.Join(dir, "nb.db"), filepath.Join(dir, "nb.sock"), filepath.Join(dir, "nb.pid")
	for _, args := range [][]string{
		{"ovsdb-tool", "create", file, "/usr/share/ovn/ovn-nb.ovsschema"},
		{"ovsdb-server", file, "--remote=punix:" + sock, "--pidfile=" + pid, "--unixctl=" + filepath.Join(dir, "nb.ctl"),
			"--log-file=" + filepath.Join(dir, "nb.log"), "--detach"},
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
	return &Northbound{Northbound: ovs.Northbound{DB: "unix:" + sock}, t: t}
}

// Nbctl runs ovn-nbctl on it.
func (n *Northbound) Nbctl(args ...string) string {
	n.t.Helper()
	out, err := exec.Command("ovn-nbctl", append([]string{"--db=" + n.DB, "--timeout=10"}, args...)...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("ovn-nbctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
