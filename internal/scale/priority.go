package scale

import (
	"errors"
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
// real node sees.
const agentsNice = -5

// setProcessNice gives every thread of this process nice. Linux keeps a nice
// value per thread, and a thread starts with its creator's, so a pass is
// taken again until it finds no thread it has not set.
func setProcessNice(nice int) error {
	done := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh++
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("nice %d for thread %d: %w", nice, tid, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return nil
		}
	}
}

// raiseAgentsPriority gives the process agentsNice until restore, which
// puts back the nice it had: the processes a later run starts take their
// thread's nice, and must not start at the agents'.
func raiseAgentsPriority() (restore func(), err error) {
	was, err := threadNice(0)
	if err != nil {
		return func() {}, fmt.Errorf("agents' priority: %w", err)
	}
	restore = func() { _ = setProcessNice(was) }
	if err := setProcessNice(agentsNice); err != nil {
		restore()
		return func() {}, fmt.Errorf("agents' priority: %w", err)
	}
	return restore, nil
}

// threadNice is the nice value of thread tid (0: the calling one).
func threadNice(tid int) (int, error) {
	// The system call answers 20 - nice (1 to 40).
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	return 20 - raw, err
}
