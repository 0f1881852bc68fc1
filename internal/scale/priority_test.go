package scale

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// threadNices are the nice values of this process's threads.
func threadNices(t *testing.T) map[int]int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if nice, err := threadNice(tid); err == nil {
			out[tid] = nice
		}
	}
	return out
}

// The agents' priority covers every thread, and restore puts back what the
// process had: the control plane of a later run in the same process (the
// benchmarks) must not start at the agents' priority.
func TestTheAgentsPriorityIsGivenBack(t *testing.T) {
	before := threadNices(t)
	restore, err := raiseAgentsPriority()
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		t.Skip("needs CAP_SYS_NICE:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for tid, nice := range threadNices(t) {
		if nice != agentsNice {
			t.Errorf("thread %d: nice %d, want %d", tid, nice, agentsNice)
		}
	}
	restore()
	for tid, nice := range threadNices(t) {
		if was, ok := before[tid]; ok && nice != was {
			t.Errorf("thread %d: nice %d after restore, want %d", tid, nice, was)
		}
	}
}
