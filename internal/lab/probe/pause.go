package probe

import (
	"context"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pauseTick is how long the pause watcher sleeps between two looks at the
// clock (see Report.Pause).
const pauseTick = time.Millisecond

// machinePauses measures, until ctx ends, the longest a thread of the probe
// slept beyond pauseTick. The thread is real time where the kernel grants it
// (Report.Pause.Realtime): no thread of the machine then runs before it, so
// what it oversleeps is time the machine itself did not run, as when the
// host of a virtual machine takes its processors away. It keeps its
// processor of the Go runtime while it sleeps (a raw system call), so that
// coming back costs no wait for one; Run gives the runtime one more.
func machinePauses(ctx context.Context) (p Pause) {
	p.Realtime = RealtimeThread()
	ts := unix.NsecToTimespec(pauseTick.Nanoseconds())
	for ctx.Err() == nil {
		before := time.Now()
		_, _, _ = syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		now := time.Now()
		p.note(now.Sub(before)-pauseTick, now)
	}
	return p
}
