package scale

import (
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	v := debug.SetGCPercent(-1)
	debug.SetGCPercent(v)
	return v
}

func TestTheAgentsCollectorIsRelaxedAndGivenBack(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)
	restore := relaxCollector()
	if got := gcPercent(); got != agentsGCPercent {
		t.Errorf("during the run GOGC = %d, want %d", got, agentsGCPercent)
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	machine := int64(si.Totalram) * int64(si.Unit)
	if got := debug.SetMemoryLimit(-1); got != machine/agentsMemoryShare {
		t.Errorf("during the run the memory limit is %d, want 1/%d of the machine's %d", got, agentsMemoryShare, machine)
	}
	restore()
	if got := gcPercent(); got != percent {
		t.Errorf("after the run GOGC = %d, want %d back", got, percent)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("after the run the memory limit is %d, want %d back", got, limit)
	}
}

func TestTheCollectorSettingsOfThePersonRunningItStand(t *testing.T) {
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "2GiB")
	percent, limit := gcPercent(), debug.SetMemoryLimit(-1)
	defer relaxCollector()()
	if got := gcPercent(); got != percent {
		t.Errorf("GOGC set: the collector's target changed from %d to %d", percent, got)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("GOMEMLIMIT set: the memory limit changed from %d to %d", limit, got)
	}
}
