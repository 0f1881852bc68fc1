package agent

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/netplugin"
)

// finalApproach is how long before a step's time the agent stops waiting on
// Go's timers and waits on the kernel's, from the thread that runs the step.
// The runtime's netpoller sleeps in whole milliseconds, so a Go timer fires
// up to a millisecond late even on an idle process, and on a busy node a
// woken goroutine waits for a thread and a processor: tens of milliseconds
// at 10 nodes on 2 cores. The last stretch is a timerfd, which the kernel's
// high-resolution timers end within microseconds; it is long enough that the
// Go timer's own lateness falls inside it. It is well inside the operator's
// abort margin (500 ms), so a plan withdrawn in time is seen before it.
const finalApproach = 50 * time.Millisecond

// untilFinalApproach waits, on a Go timer, until finalApproach before at (by
// the agent's clock), or until ctx ends.
func (a *Agent) untilFinalApproach(ctx context.Context, at time.Time) error {
	wait := at.Sub(a.now()) - finalApproach
	if wait <= 0 || pause(ctx, wait) {
		return nil
	}
	return ctx.Err()
}

// sleepPrecisely blocks the calling goroutine for d on a monotonic timerfd
// (it cannot be cancelled: it is meant for the last few milliseconds before
// a step); without a timerfd it falls back to a Go timer.
//
// The thread sleeps to the very time. Waking 300 µs early and spinning the
// rest, as the agent once did, was later more often: measured side by side
// (200 waits each, a 3-node lab under the probe, from an agent pod's cgroup),
// spinning started p99 0.8 to 2.7 ms and at most 1.6 to 3.1 ms late, a plain
// wake p99 0.3 to 0.9 ms and at most 0.7 to 1.0 ms, for a median of 0.07 ms.
// A thread that runs through its short slice while spinning is the first the
// kernel preempts at its next tick; a thread woken by its timer is placed
// ahead of those that ran.
func sleepPrecisely(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return sleepOnTimerfd(d)
}

// sleepOnTimerfd blocks the calling thread for d on a monotonic timerfd,
// which the kernel's high-resolution timers end within microseconds.
func sleepOnTimerfd(d time.Duration) error {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		time.Sleep(d)
		return nil
	}
	defer unix.Close(fd)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return nil
	}
	var expirations [8]byte
	for {
		_, err := unix.Read(fd, expirations[:])
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Priority is what the thread that runs a step got from the kernel.
type Priority string

const (
	// PriorityRealtime: SCHED_FIFO 1, ahead of every normal thread.
	PriorityRealtime Priority = "realtime"
	// PriorityShortSlice: a normal thread asking the kernel (EEVDF, Linux
	// 6.12 and later) for 100 µs slices, which lets it preempt the running
	// thread when it wakes instead of waiting out that thread's slice; at
	// nice -20 where allowed.
	PriorityShortSlice Priority = "short-slice"
	// PriorityNormal: neither was granted.
	PriorityNormal Priority = "normal"
)

// raiseThreadPriority gives the calling thread the best priority the kernel
// grants it. Real time needs CAP_SYS_NICE and, on kernels with real-time
// group scheduling (CONFIG_RT_GROUP_SCHED), a real-time budget in the
// thread's cgroup, which a pod's cgroup does not have.
func raiseThreadPriority() Priority {
	if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0) == nil {
		return PriorityRealtime
	}
	slice := uint64(shortSlice)
	if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: schedNormal, Nice: -20, Runtime: slice}, 0) == nil ||
		unix.SchedSetAttr(0, &unix.SchedAttr{Policy: schedNormal, Runtime: slice}, 0) == nil {
		return PriorityShortSlice
	}
	return PriorityNormal
}

// shortSlice is the slice the agent's threads ask for (see PriorityShortSlice).
const shortSlice = 100 * time.Microsecond

// askShortSlices asks short slices for every thread of the agent as it is
// now, keeping each one's policy and nice: whichever thread the Go runtime
// hands a step's answer to (the OVSDB reply, read by another goroutine) then
// gets to run when it arrives. It returns how many threads took it; kernels
// before 6.12 take the request and ignore it.
func askShortSlices() int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil || attr.Policy != schedNormal {
			continue
		}
		attr.Runtime = uint64(shortSlice)
		if unix.SchedSetAttr(tid, attr, 0) == nil {
			n++
		}
	}
	return n
}

// schedNormal is SCHED_OTHER (x/sys/unix names only the other policies).
const schedNormal = 0

// onTime runs fire at the agent-clock time at, from a thread of its own
// raised to the best priority the kernel grants (raiseThreadPriority) for
// its final approach and the step: on a busy node the step then starts when
// its time comes, not when the scheduler next gets to the agent. The thread
// is never handed back to the Go runtime (the goroutine ends locked to it, so
// the runtime ends the thread): its priority cannot leak into other work.
func (a *Agent) onTime(ctx context.Context, at time.Time, fire func(context.Context) (netplugin.Outcome, error)) (began, ended time.Time, o netplugin.Outcome, prio Priority, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked, see above
		prio = raiseThreadPriority()
		waited, known := threadRunDelay()
		if err = sleepPrecisely(at.Sub(a.now())); err != nil {
			return
		}
		began = a.now()
		o, err = fire(ctx)
		ended = a.now()
		if after, ok := threadRunDelay(); ok && known {
			o.Waited = after - waited
		}
	}()
	<-done
	return began, ended, o, prio, err
}

// threadRunDelay is how long the calling thread has, over its life, been
// ready to run and waited for a processor (the second figure of its
// schedstat). Read around a step, it tells the node's busy CPUs apart from a
// slow database in the step's lateness and time to commit.
func threadRunDelay() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}
