package kubenode

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Running are the node's processes the lab recorded and still found alive
// (0: not running).
type Running struct{ Holder, Containerd, Kubelet, KubeProxy int }

// Stop stops the node as its power going off would, in the order that leaves
// nothing behind: the kubelet (so nothing restarts), every process of its
// pods (the node's cgroup), the runtime shims and containerd (everything left
// in the node's mount namespace), the holder, and then the node's cgroups.
// The node's directory stays: its state is what a restart starts from.
func (n Node) Stop(r Running) error {
	var errs []error
	// Power off: nothing gets to clean up after itself, as on a machine that loses power.
	for _, p := range []int{r.Kubelet, r.KubeProxy} {
		if p > 0 {
			terminate(p, 0)
		}
	}
	if err := n.killCgroup(10 * time.Second); err != nil {
		errs = append(errs, err)
	}
	if r.Holder > 0 {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", r.Holder)); err == nil {
			for _, pid := range inMountNamespace(ns) {
				if pid != r.Holder {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
	for _, p := range []int{r.Containerd, r.Holder} {
		if p > 0 {
			terminate(p, 0)
		}
	}
	if err := n.removeCgroupRoot(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// terminate sends SIGTERM, then SIGKILL after grace (at once when grace is
// 0), and waits for the exit.
func terminate(pid int, grace time.Duration) {
	if pid <= 1 {
		return
	}
	sig := syscall.SIGTERM
	if grace == 0 {
		sig, grace = syscall.SIGKILL, 5*time.Second
	}
	_ = syscall.Kill(pid, sig)
	deadline := time.Now().Add(grace)
	for Alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(grace)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Alive: the process exists and is not a zombie waiting for its parent.
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			return i+2 < len(s) && s[i+2] != 'Z'
		}
	}
	return false
}

// inMountNamespace lists the processes in the mount namespace ns ("mnt:[N]").
func inMountNamespace(ns string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err == nil && l == ns {
			out = append(out, pid)
		}
	}
	return out
}
