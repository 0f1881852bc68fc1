// Package ovstest starts a real ovsdb-server and ovs-vswitchd (userspace
// datapath) inside a network namespace of their own, for tests of the OVS
// code: what they create is really created, and vswitchd really attaches
// devices that appear in that namespace.
package ovstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/ovsdist"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
)

// Switch is one running Open vSwitch.
type Switch struct {
	// Socket is the database's endpoint, unix:PATH.
	Socket string
	// DB is netshift's connection to it (it reconnects across Restart).
	DB *ovs.Switch
	// Netns is the namespace vswitchd runs in: create taps there.
	Netns string
	// Dir holds the database file, sockets and logs.
	Dir string
	// File is the database file, whose log records one entry per transaction.
	File string
	t    testing.TB
}

var seq atomic.Int32

// useDist runs the lab's Open vSwitch and OVN (ovsdist) in this test process:
// it skips the test (fails it under CI=true) where they are not unpacked.
func useDist(t testing.TB) ovsdist.Dist {
	t.Helper()
	d, err := ovsdist.Use()
	if err != nil {
		testenv.Require(t, &testenv.Missing{Reason: err.Error()})
	}
	return d
}

// Start runs an Open vSwitch with the integration bridge br-int (netdev
// datapath) and stops it, and its namespace, when the test ends. It skips
// the test (fails it under CI=true) without root or Open vSwitch.
func Start(t testing.TB) *Switch {
	t.Helper()
	testenv.RequireRoot(t)
	dist := useDist(t)
	dir, err := os.MkdirTemp("", "netshift-ovstest-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Switch{Dir: dir, File: filepath.Join(dir, "conf.db"), Netns: fmt.Sprintf("nsovs-%d-%d", os.Getpid(), seq.Add(1)), t: t}
	s.Socket = "unix:" + filepath.Join(dir, "db.sock")
	t.Cleanup(s.stop)
	s.Run("ip", "netns", "add", s.Netns)
	s.Run("ip", "-n", s.Netns, "link", "set", "lo", "up")
	s.Run("ovsdb-tool", "create", s.File, dist.Schema("vswitch"))
	s.inNetns("ovsdb-server", s.File, "--remote=punix:"+filepath.Join(dir, "db.sock"), "--pidfile="+filepath.Join(dir, "ovsdb-server.pid"),
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(dir, "ovsdb-server.log"), "--detach")
	s.Vsctl("--no-wait", "init")
	s.inNetns("ovs-vswitchd", s.Socket, "--pidfile="+filepath.Join(dir, "ovs-vswitchd.pid"),
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(dir, "ovs-vswitchd.log"), "--detach")
	s.Vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev")
	if s.DB, err = ovs.OpenSwitch(context.Background(), s.Socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.DB.Close)
	return s
}

func (s *Switch) env() []string {
	return append(os.Environ(), "OVS_RUNDIR="+s.Dir, "OVS_LOGDIR="+s.Dir, "OVS_DBDIR="+s.Dir)
}

// Run runs a command, failing the test if it fails.
func (s *Switch) Run(name string, args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = s.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *Switch) inNetns(name string, args ...string) string {
	s.t.Helper()
	return s.Run("ip", append([]string{"netns", "exec", s.Netns, name}, args...)...)
}

// Vsctl runs ovs-vsctl on this switch.
func (s *Switch) Vsctl(args ...string) string {
	s.t.Helper()
	return strings.TrimSpace(s.Run("ovs-vsctl", append([]string{"--db=" + s.Socket, "--timeout=20"}, args...)...))
}

// PluggedPort reads a port's plug back from the switch, through netshift's
// own reader (ovs.Switch.Plugged).
func (s *Switch) PluggedPort(id string) (plug.Plugged, bool) {
	s.t.Helper()
	all, err := s.DB.Plugged(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	for _, pl := range all {
		if pl.PortID == id {
			return pl, true
		}
	}
	return plug.Plugged{}, false
}

// Flows dumps a bridge's OpenFlow flows, without their counters.
func (s *Switch) Flows(bridge string) []string {
	s.t.Helper()
	var flows []string
	for _, l := range strings.Split(s.Run("ovs-ofctl", "dump-flows", "--no-stats", bridge), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "NXST_FLOW") {
			flows = append(flows, l)
		}
	}
	return flows
}

// Transactions are the database log's records: one per committed transaction.
func (s *Switch) Transactions() []string {
	s.t.Helper()
	var recs []string
	var cur strings.Builder
	for _, l := range strings.Split(s.Run("ovsdb-tool", "-m", "show-log", s.File), "\n") {
		if strings.HasPrefix(l, "record ") && cur.Len() > 0 {
			recs = append(recs, cur.String())
			cur.Reset()
		}
		cur.WriteString(l + "\n")
	}
	if cur.Len() > 0 {
		recs = append(recs, cur.String())
	}
	return recs
}

// Restart stops vswitchd and ovsdb-server and starts them again on the same
// database: what a node's reboot or an OVS restart leaves behind.
func (s *Switch) Restart() {
	s.t.Helper()
	s.stopDaemons()
	s.inNetns("ovsdb-server", s.File, "--remote=punix:"+filepath.Join(s.Dir, "db.sock"), "--pidfile="+filepath.Join(s.Dir, "ovsdb-server.pid"),
		"--unixctl="+filepath.Join(s.Dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(s.Dir, "ovsdb-server.log"), "--detach")
	s.inNetns("ovs-vswitchd", s.Socket, "--pidfile="+filepath.Join(s.Dir, "ovs-vswitchd.pid"),
		"--unixctl="+filepath.Join(s.Dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(s.Dir, "ovs-vswitchd.log"), "--detach")
	s.Vsctl("show")
}

func (s *Switch) stopDaemons() {
	for _, d := range []string{"ovs-vswitchd", "ovsdb-server"} {
		pidfile := filepath.Join(s.Dir, d+".pid")
		data, err := os.ReadFile(pidfile)
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		if pid <= 0 {
			continue
		}
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != d {
			continue
		}
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		for i := 0; i < 100; i++ { // gone, or a zombie nobody reaps
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || strings.Contains(string(stat), ") Z ") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = os.Remove(pidfile)
	}
}

func (s *Switch) stop() {
	s.stopDaemons()
	_ = exec.Command("ip", "netns", "del", s.Netns).Run()
	if !s.t.Failed() {
		_ = os.RemoveAll(s.Dir)
	} else {
		s.t.Logf("Open vSwitch files kept in %s", s.Dir)
	}
}
