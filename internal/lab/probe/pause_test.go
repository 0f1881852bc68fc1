package probe

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// A process stopped for 80 ms (SIGSTOP, then SIGCONT from another process)
// is, to its pause watcher, a machine that did not run for 80 ms.
func TestMachinePausesSeesTheProcessStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pause := make(chan Pause, 1)
	go func() { pause <- machinePauses(ctx) }()
	time.Sleep(50 * time.Millisecond)
	before := time.Now()
	stopper := exec.Command("sh", "-c", fmt.Sprintf("kill -STOP %d; sleep 0.08; kill -CONT %d", os.Getpid(), os.Getpid()))
	if err := stopper.Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	p := <-pause
	if p.MaxMs < 60 {
		t.Fatalf("longest pause %.1f ms, want about 80 (the process was stopped 80 ms)", p.MaxMs)
	}
	if p.Ended.Before(before) {
		t.Fatalf("the longest pause ended at %s, before the stop at %s", p.Ended, before)
	}
	t.Logf("longest pause %.1f ms (real time: %v)", p.MaxMs, p.Realtime)
}

// A goroutine that keeps the only processor of the runtime busy holds up
// the probe's own ticker until the runtime preempts it (about 10 ms): a
// stall of the probe, not of the machine.
func TestOwnStallsSeesTheRuntimeBusy(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx, cancel := context.WithCancel(context.Background())
	stall := make(chan Stall, 1)
	go func() { stall <- ownStalls(ctx) }()
	time.Sleep(20 * time.Millisecond)
	for end := time.Now().Add(40 * time.Millisecond); time.Now().Before(end); {
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	if s := <-stall; s.MaxMs < 5 {
		t.Fatalf("longest stall %.1f ms while the only processor was busy for 40 ms, want at least 5", s.MaxMs)
	}
}
