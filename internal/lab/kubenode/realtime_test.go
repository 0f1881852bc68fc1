package kubenode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/testenv"
)

func TestGrantRealtimeLetsAPodsThreadRunRealtime(t *testing.T) {
	testenv.RequireRoot(t)
	hierarchy := filepath.Join(cgroupFS, "cpu")
	if _, err := os.Stat(filepath.Join(hierarchy, "cpu.rt_runtime_us")); err != nil {
		t.Skip("no real-time group scheduling here: threads get real time without a budget")
	}
	n := Node{Name: "rt-test", CgroupRoot: fmt.Sprintf("/netshift-test-rt-%d", os.Getpid())}
	pod := filepath.Join(hierarchy, n.CgroupRoot, "kubepods", "pod1", "container1")
	if err := os.MkdirAll(pod, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for dir := pod; dir != hierarchy; dir = filepath.Dir(dir) {
			_ = os.Remove(dir)
		}
	})
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	// Before the cgroups go: a cgroup holding a real-time thread keeps its budget.
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := sleeper.Process.Pid
	if err := os.WriteFile(filepath.Join(pod, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := func() error {
		return unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0)
	}
	if fifo() == nil {
		t.Fatal("a thread of a new cgroup got real time without a budget: nothing to test")
	}
	if err := n.GrantRealtime(pid, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := fifo(); err != nil {
		t.Fatalf("real time after the grant: %v", err)
	}
	// A process outside the node's cgroup is not the node's to grant.
	err := n.GrantRealtime(os.Getpid(), 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not under the node's") {
		t.Fatalf("grant to a process outside the node: %v", err)
	}
}
