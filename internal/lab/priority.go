package lab

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The lab runs every node's daemons, its control plane and its probe on the
// same few cores, and the kernel shares them out by weight. On these
// machines autogroups are on (sched_autogroup_enabled): every session
// outside a cgroup of its own is scheduled as one entity, and a thread's own
// niceness only ranks it inside its session. OVS and OVN daemons detach into
// sessions of their own, and so does the probe: a process raised here gets
// the niceness for its session as well as for its threads.
//
// daemonNice is what ovs-ctl and ovn-ctl give ovsdb-server, ovs-vswitchd,
// ovn-controller, northd and ic on a real node (their --*-priority default).
// Here it matters more: the lab's datapath is ovs-vswitchd's userspace one,
// standing in for a real node's kernel datapath, which forwards in softirq
// ahead of every process. At the default weight a burst of the control
// plane left an ovs-vswitchd runnable and waiting for a processor for 13 to
// 18 ms at a time, a silence on every connection through its node that no
// real node has. Measured side by side in time, 2 runs each at 3 nodes with
// the probe real time: the longest port-change gap 59.1 and 28.4 ms at the
// default, 35.8 and 24.2 ms at -10. The agents pay for it: at T0 every
// switch reconfigures, on the same cores, before the agent's thread gets to
// read its commit, whose time grew from 1.6 and 2.8 ms (p50; max 3.6 and
// 6.2) to 2.4 and 4.7 ms (max 6.0 and 10.8).
const daemonNice = -10

// The probe is raised further (raiseProbe).

// setSessionNice gives process pid's session and every thread of pid the
// niceness nice. Threads started later inherit it from the thread that
// starts them.
func setSessionNice(pid, nice int) error {
	// Without autogroups the file is absent or refuses the write: the
	// threads' own niceness is then what counts.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/autogroup", pid), []byte(strconv.Itoa(nice)), 0)
	return eachThread(pid, func(tid int) error { return unix.Setpriority(unix.PRIO_PROCESS, tid, nice) })
}

// setRealtime puts every thread of pid in SCHED_FIFO at priority; threads
// started later inherit it. It fails where the kernel refuses real time to
// the process (no CAP_SYS_NICE, or a cgroup without a real-time budget).
func setRealtime(pid, priority int) error {
	return eachThread(pid, func(tid int) error {
		return unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(priority)}, 0)
	})
}

// eachThread calls set for every thread of pid, stopping at the first error.
func eachThread(pid int, set func(tid int) error) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("pid %d: list threads: %w", pid, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := set(tid); err != nil {
			return fmt.Errorf("pid %d: thread %d: %w", pid, tid, err)
		}
	}
	return nil
}
