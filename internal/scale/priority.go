package scale

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// agentsNice is the scheduling priority of this process, where every
// simulated node's agent runs. The agents stand for thousands of nodes'
// own CPUs; at an equal share of the machine's two cores with the API
// server's busy threads, their goroutines waited up to seconds to run (the Go
// scheduler's latency, p90 0.2 to 2 s during a 5,000-node change), and each
// agent's round trips to the operator's clock measured that wait, which no
// real node sees. The agents use little CPU on the whole, so the control
// plane loses little of it.
const agentsNice = -5

// raiseAgentsPriority gives every thread of this process agentsNice; the
// threads the Go runtime starts later inherit it from theirs. Linux keeps a
// nice value per thread, so the process's is not enough.
func raiseAgentsPriority() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("agents' priority: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, agentsNice); err != nil {
			return fmt.Errorf("agents' priority: nice %d for thread %d: %w", agentsNice, tid, err)
		}
	}
	return nil
}
