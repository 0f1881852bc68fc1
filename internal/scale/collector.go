package scale

import "runtime/debug"

// agentsGCPercent is the Go collector's target (GOGC) for this process while
// its agents run. A real agent collects its own small heap on its own node's
// CPU; here the agents of thousands of nodes share one heap and one collector,
// whose marking at the default 100 took about a quarter of this process's CPU
// during a 1,000-node change, on the two cores the API server needs and at a
// priority above it. A larger target trades memory the machine has for that
// CPU; agentsMemoryLimit makes the collector run sooner before it takes too
// much of the memory.
const (
	agentsGCPercent   = 400
	agentsMemoryLimit = 8 << 30
)

// relaxCollector sets this process's collector for the agents until restore,
// which puts back what it had.
func relaxCollector() (restore func()) {
	percent := debug.SetGCPercent(agentsGCPercent)
	limit := debug.SetMemoryLimit(agentsMemoryLimit)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
