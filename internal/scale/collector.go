package scale

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// agentsGCPercent is the Go collector's target (GOGC) for this process while
// its agents run. A real agent collects its own small heap on its own node's
// CPU; here the agents of thousands of nodes share one heap and one collector,
// whose marking at the default 100 took about a fifth of this process's CPU
// in a 1,000-node run, on the two cores the API server needs and at a priority
// above it. A larger target trades memory the machine has for that CPU.
const agentsGCPercent = 400

// agentsMemoryShare is the part of the machine's memory past which the
// collector runs sooner than agentsGCPercent asks: the rest is the control
// plane's, whose API server took 3.3 to 3.7 GiB at 5,000 nodes. At 5,000 nodes
// the agents took 4.5 GiB at their peak, under half of 23.5 GiB; at 10,000 nodes
// (not measured) the limit may bind, and the collector then runs about as
// often as at the default target.
const agentsMemoryShare = 2

// relaxCollector sets this process's collector for the agents until restore,
// which puts back what it had. What the person running it set in GOGC or
// GOMEMLIMIT is left as it is.
func relaxCollector() (restore func()) {
	var undo []func()
	if os.Getenv("GOGC") == "" {
		was := debug.SetGCPercent(agentsGCPercent)
		undo = append(undo, func() { debug.SetGCPercent(was) })
	}
	var si unix.Sysinfo_t
	if os.Getenv("GOMEMLIMIT") == "" && unix.Sysinfo(&si) == nil && si.Totalram > 0 {
		was := debug.SetMemoryLimit(int64(uint64(si.Totalram) * uint64(si.Unit) / agentsMemoryShare))
		undo = append(undo, func() { debug.SetMemoryLimit(was) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
