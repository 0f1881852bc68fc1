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
// The probe is raised (probeNice), and each node's ovsdb-server
// (ovsdbServerNice). The other OVS and OVN daemons keep the default weight,
// against ovs-ctl's nice -10: on a real node with cgroup v2
// that niceness ranks ovs-vswitchd only inside its own service's cgroup,
// which weighs no more than the pods' cgroup. Raised here (its session at
// -10) it outweighed each node's agent, kubelet and pods together: the
// longest gaps fell from 26-47 to 15-27 ms, but the steps started up to
// 4.3 ms late (0.4 to 1.7 ms at the default) and committed up to 6.5 ms
// after their time (3.5 to 3.9 ms).

// setSessionNice gives process pid's session and every thread of pid the
// niceness nice. Threads started later inherit it from the thread that
// starts them.
func setSessionNice(pid, nice int) error {
	// Without autogroups the file is absent or refuses the write: the
	// threads' own niceness is then what counts.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/autogroup", pid), []byte(strconv.Itoa(nice)), 0)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("pid %d: list threads: %w", pid, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("pid %d: thread %d: nice %d: %w", pid, tid, nice, err)
		}
	}
	return nil
}

// ovsdbServerNice is the niceness of each node's ovsdb-server, ovs-ctl's own
// (--ovsdb-server-priority). On a real node it answers its agent's
// transaction from cores of its node; here ten of them woke at once on the
// two cores the ten nodes' switches share, and a step's commit, sent on time
// by an agent that never waited for a processor, came 25 to 30 ms after its
// time at worst; raised, 11 to 15 ms (one 10-node benchmark each). It costs
// nothing the others miss: it used 27 ms of CPU per change at 10 nodes,
// against 7.4 s for the switches.
const ovsdbServerNice = -10
