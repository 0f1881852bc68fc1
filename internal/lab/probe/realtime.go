package probe

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// realtimePriority is the SCHED_FIFO priority of the lab's measuring threads:
// above the agents' step threads (1), which may hold the cores the nodes
// share for a step's few milliseconds; a measurement then sees the network
// stand still, not its own thread wait.
const realtimePriority = 2

// RealtimeThread binds the calling goroutine to its thread for good and asks
// the kernel to run that thread real time (SCHED_FIFO, realtimePriority); it
// says whether the kernel granted it (root, and a cgroup with a real-time
// budget where the kernel asks for one). The thread is never unlocked: it
// ends with the goroutine, and its priority with it. The probe's threads and
// lab migrate's traffic thread measure this way.
func RealtimeThread() bool {
	runtime.LockOSThread()
	return unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: realtimePriority}, 0) == nil
}
