package agent

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/netplugin"
)

// A step never starts before its time, and the real-time thread it started
// from is gone afterwards: no goroutine of the agent runs at real-time
// priority after a step.
func TestOnTime(t *testing.T) {
	a := &Agent{now: func() time.Time { return time.Now().Add(-time.Hour) }} // the agent's clock an hour behind
	var raised bool
	for i := range 20 {
		at := a.now().Add(time.Duration(i%4) * time.Millisecond)
		ran := false
		began, ended, _, prio, err := a.onTime(context.Background(), at, func(context.Context) (netplugin.Outcome, error) {
			ran = true
			return netplugin.Outcome{Changed: 1}, nil
		})
		if err != nil || !ran {
			t.Fatalf("round %d: ran %v, %v", i, ran, err)
		}
		if began.Before(at) || ended.Before(began) {
			t.Fatalf("round %d: scheduled at %s, began %s, ended %s", i, at.Format(time.StampMicro), began.Format(time.StampMicro), ended.Format(time.StampMicro))
		}
		raised = raised || prio != PriorityNormal
	}
	if !raised {
		t.Log("no raised priority granted here: checked the timing only")
	}
	// Every thread the runtime hands out now runs at normal priority.
	normal, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			attr, err := unix.SchedGetAttr(0, 0)
			if err != nil {
				t.Error(err)
				return
			}
			if attr.Policy != schedNormal || attr.Nice != normal.Nice {
				t.Errorf("a thread of the runtime runs with policy %d, nice %d after a step", attr.Policy, attr.Nice)
			}
		}()
	}
	wg.Wait()
}

// A step that waits for a processor says how long: the figure that tells a
// busy node from a slow database in a step's lateness.
func TestOnTimeCountsTheStepsWaitForAProcessor(t *testing.T) {
	// Busy processes, twice as many as processors: the kernel's threads to
	// wait behind (threads of this process would wait for the Go scheduler).
	for range 2 * runtime.NumCPU() {
		busy := exec.Command("sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	}
	a := &Agent{now: time.Now}
	_, _, o, _, err := a.onTime(context.Background(), time.Now().Add(time.Millisecond), func(context.Context) (netplugin.Outcome, error) {
		// The step's thread steps down among the busy threads, as on a node
		// whose kernel grants it nothing, and works for a while.
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: schedNormal, Nice: 19}, 0); err != nil {
			return netplugin.Outcome{}, err
		}
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		}
		return netplugin.Outcome{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := threadRunDelay(); !ok {
		t.Skip("this kernel keeps no schedstat")
	}
	// At nice 19 against twice as many busy processes as processors, the step
	// ran a small share of its 100 ms.
	if o.Waited < 30*time.Millisecond {
		t.Fatalf("the step's thread waited %v for a processor, want most of its 100 ms", o.Waited)
	}
}

func TestSleepPreciselyNeverShort(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, 0, 200 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		if err := sleepPrecisely(d); err != nil {
			t.Fatal(err)
		}
		if slept := time.Since(start); slept < d {
			t.Fatalf("asked for %s, slept %s", d, slept)
		}
	}
}

// Every thread of the agent asks for short slices before a step, where the
// kernel keeps the request (Linux 6.12 and later).
func TestAskShortSlices(t *testing.T) {
	if n := askShortSlices(); n == 0 {
		t.Skip("no thread took a slice request here")
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // the thread ended meanwhile
		}
		if attr.Policy == schedNormal && attr.Runtime != uint64(shortSlice) {
			t.Fatalf("thread %d: slice %d ns, want %d", tid, attr.Runtime, shortSlice)
		}
	}
}
