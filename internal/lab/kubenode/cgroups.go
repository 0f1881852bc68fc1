package kubenode

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const cgroupFS = "/sys/fs/cgroup"

// hierarchies lists the machine's cgroup hierarchies: the v1 controllers the
// kubelet runs on here (cgroupfs), and the v2 "unified" mount, where runc
// makes each container's cgroup too.
func hierarchies() []string {
	entries, _ := os.ReadDir(cgroupFS)
	var out []string
	for _, e := range entries {
		p := filepath.Join(cgroupFS, e.Name())
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// makeCgroupRoot creates the node's cgroup in every hierarchy: the kubelet
// checks it exists before it starts. A new cpuset cgroup has no CPUs and no
// memory nodes until given its parent's.
func (n Node) makeCgroupRoot() error {
	for _, h := range hierarchies() {
		dir := filepath.Join(h, n.CgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("node %s: cgroup %s: %w", n.Name, dir, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, f), v, 0o644)
				}
				if err != nil {
					return fmt.Errorf("node %s: cgroup %s: %s: %w", n.Name, dir, f, err)
				}
			}
		}
	}
	return nil
}

// cgroupPids lists every process in the node's cgroup and below.
func (n Node) cgroupPids() []int {
	seen := map[int]bool{}
	for _, h := range hierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, n.CgroupRoot), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	return pids
}

// killCgroup kills every process of the node's pods until none is left.
func (n Node) killCgroup(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := n.cgroupPids()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: processes %v of its pods did not exit", n.Name, pids)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeCgroupRoot removes the node's cgroups, deepest first.
func (n Node) removeCgroupRoot() error {
	var errs []string
	for _, h := range hierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, n.CgroupRoot), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("node %s: cgroups left: %s", n.Name, strings.Join(errs, "; "))
	}
	return nil
}
