package kubenode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// GrantRealtime gives process pid of the node's pods a real-time budget of
// budget per second: its cpu cgroup and every cgroup between it and the
// node's cgroup get cpu.rt_runtime_us, the node's first. A kernel with
// real-time group scheduling (CONFIG_RT_GROUP_SCHED, as here) refuses
// SCHED_FIFO to a thread whose cgroup has no budget, and new cgroups have
// none; the distributions' kernels are built without it, so on a real node
// a privileged pod's thread gets real time outright. The lab grants it so
// that its nodes behave like those. Without real-time group scheduling
// there is nothing to grant, and it returns nil.
func (n Node) GrantRealtime(pid int, budget time.Duration) error {
	hierarchy := filepath.Join(cgroupFS, "cpu")
	if _, err := os.Stat(filepath.Join(hierarchy, "cpu.rt_runtime_us")); err != nil {
		return nil
	}
	path, err := cpuCgroup(pid)
	if err != nil {
		return fmt.Errorf("node %s: pid %d: %w", n.Name, pid, err)
	}
	rest, ok := strings.CutPrefix(path, n.CgroupRoot+"/")
	if !ok {
		return fmt.Errorf("node %s: pid %d is in cgroup %s, not under the node's %s", n.Name, pid, path, n.CgroupRoot)
	}
	dir := filepath.Join(hierarchy, n.CgroupRoot)
	us := []byte(strconv.FormatInt(budget.Microseconds(), 10))
	for _, part := range append([]string{""}, strings.Split(rest, "/")...) {
		dir = filepath.Join(dir, part)
		if err := os.WriteFile(filepath.Join(dir, "cpu.rt_runtime_us"), us, 0o644); err != nil {
			return fmt.Errorf("node %s: pid %d: real-time budget %v: %w", n.Name, pid, budget, err)
		}
	}
	return nil
}

// cpuCgroup is the path of pid's cgroup in the cpu controller's hierarchy.
func cpuCgroup(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no cpu cgroup in /proc/%d/cgroup", pid)
}
