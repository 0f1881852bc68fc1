package probe

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// liveLoop carries every long-lived connection of a run, both its ends, on
// one thread of its own: it sends each client's message when it is due,
// echoes at each server end, and times each echo as it arrives. The thread is
// real time where the kernel grants it (Report.LongLivedRealtime), and it
// never waits for the Go scheduler (raw system calls, its processor kept),
// so a gap it measures is the network's or the machine's, not a wait of the
// probe's own threads for a processor: with the probe's goroutines at a
// normal priority, a change's burst of CPU made them wait up to 56 ms, and
// that wait was counted as the connections' silence.
type liveLoop struct {
	interval time.Duration
	// endGrace is how long the loop runs on past its end while a connection
	// is silent: one the network stalled just before the end (a restart, a
	// crash of the node's switch) is dead only if it does not echo again.
	endGrace time.Duration
	mu       sync.Mutex
	pending  []*liveEnd
	// closed: the loop takes no more ends (it has finished those it had).
	closed   bool
	done     chan struct{}
	realtime bool
}

// liveEnd is one end of a long-lived connection.
type liveEnd struct {
	conn net.Conn // keeps fd open; closed by its owner once the loop is done
	fd   int
	// client ends send and time; server ends echo.
	client  bool
	settled func()
	unsent  []byte
	partial int // bytes of an echo read so far (clients)
	seq     uint64
	res     *LongLived
	last    time.Time
	maxGap  time.Duration
	ended   time.Time
	err     error
}

// maxUnsent bounds what an end keeps to send while its peer does not read:
// past it the connection counts as dead.
const maxUnsent = 1 << 20

func newLiveLoop(interval time.Duration) *liveLoop {
	return &liveLoop{interval: interval, endGrace: EndGrace, done: make(chan struct{})}
}

// EndGrace is how long a long-lived connection silent when the probe ends
// has to echo again before it counts as dead.
const EndGrace = 15 * time.Second

// aliveWithin is how recent a connection's last echo must be for it to count
// as alive at the end.
const aliveWithin = 2 * time.Second

// serveEcho hands a server end to the loop and holds it until the loop ends.
func (l *liveLoop) serveEcho(c net.Conn) {
	if e, err := l.newEnd(c); err == nil {
		l.adopt(e)
	}
	<-l.done
}

// addClient hands a dialed client end to the loop; res is filled as it runs
// and final once the loop is done.
func (l *liveLoop) addClient(c net.Conn, res *LongLived, settled func()) error {
	e, err := l.newEnd(c)
	if err != nil {
		return err
	}
	e.client, e.res, e.settled, e.last = true, res, settled, time.Now()
	if !l.adopt(e) {
		return errors.New("the probe ended before the connection was up")
	}
	return nil
}

func (l *liveLoop) newEnd(c net.Conn) (*liveEnd, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("long-lived connection %T has no file descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	e := &liveEnd{conn: c}
	if err := rc.Control(func(fd uintptr) { e.fd = int(fd) }); err != nil {
		return nil, err
	}
	return e, nil
}

// adopt hands e to the loop, unless the loop has ended.
func (l *liveLoop) adopt(e *liveEnd) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.pending = append(l.pending, e)
	return true
}

// run serves the connections until ctx ends, then finishes each client's
// result. It holds its thread, and one processor of the Go runtime, for good.
func (l *liveLoop) run(ctx context.Context) {
	defer close(l.done)
	l.realtime = RealtimeThread()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		l.finishPending(fmt.Errorf("epoll: %w", err))
		return
	}
	defer unix.Close(epfd)
	ends := map[int32]*liveEnd{}
	var clients []*liveEnd
	events := make([]unix.EpollEvent, 64)
	buf := make([]byte, 4096)
	next := time.Now().Add(l.interval)
	// The loop's own clock ends it at ctx's deadline: the thread runs in real
	// time, while the runtime's timer that cancels ctx may wait on a busy machine.
	deadline, bounded := ctx.Deadline()
	var ended time.Time
	for {
		if ctx.Err() != nil || (bounded && !time.Now().Before(deadline)) {
			if ended.IsZero() {
				ended = time.Now()
			}
			if !anySilent(clients, time.Now()) || time.Since(ended) >= l.endGrace {
				break
			}
		}
		// Never park the thread on a lock: a registration waits a turn.
		if l.mu.TryLock() {
			for _, e := range l.pending {
				ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(e.fd)}
				if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, e.fd, &ev); err != nil {
					if e.err = fmt.Errorf("epoll: %w", err); e.client {
						e.finish(time.Now())
					}
					continue
				}
				ends[int32(e.fd)] = e
				if e.client {
					clients = append(clients, e)
				}
			}
			l.pending = l.pending[:0]
			l.mu.Unlock()
		}
		// Wake at least every millisecond: for the next send, a new end, the end.
		timeout := 0
		if time.Until(next) > 0 {
			timeout = 1
		}
		n, err := epollWait(epfd, events, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			for _, e := range clients {
				e.err = cmp.Or(e.err, fmt.Errorf("epoll: %w", err))
			}
			l.finishPending(fmt.Errorf("epoll: %w", err))
			break
		}
		now := time.Now()
		for _, ev := range events[:n] {
			e := ends[ev.Fd]
			if e == nil {
				continue
			}
			if e.err == nil {
				e.readable(now, buf)
			}
			// A failed end (here, or at its last send) leaves the loop: its
			// socket would be ready at every wait.
			if e.err != nil {
				_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, e.fd, nil)
				delete(ends, ev.Fd)
			}
		}
		if !now.Before(next) {
			for _, e := range clients {
				if e.err == nil {
					e.send()
				}
			}
			// A late send is not made up for: the next is due an interval on.
			if next = next.Add(l.interval); next.Before(now) {
				next = now.Add(l.interval)
			}
		}
	}
	for _, e := range clients {
		e.finish(time.Now())
	}
	l.finishPending(nil)
}

// anySilent says whether a connection that has not failed has not echoed
// for aliveWithin.
func anySilent(clients []*liveEnd, now time.Time) bool {
	for _, e := range clients {
		if e.err == nil && now.Sub(e.last) >= aliveWithin {
			return true
		}
	}
	return false
}

// finishPending finishes the clients that never joined the loop (failed
// with err, if not nil) and closes the loop to new ones.
func (l *liveLoop) finishPending(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.pending {
		if e.client {
			e.err = cmp.Or(e.err, err)
			e.finish(time.Now())
		}
	}
	l.pending, l.closed = nil, true
}

// readable reads what has arrived: a server end echoes it, a client end times it.
func (e *liveEnd) readable(now time.Time, buf []byte) {
	for {
		n, err := rawIO(syscall.SYS_READ, e.fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return
		case err != nil:
			e.err = fmt.Errorf("read: %w", err)
			return
		case n == 0:
			e.err = errors.New("read: EOF")
			return
		}
		if !e.client {
			e.write(buf[:n])
			continue
		}
		if e.partial == 0 && e.last.Before(now) {
			if gap := now.Sub(e.last); gap > e.maxGap {
				e.maxGap, e.ended = gap, now
			}
			e.last = now
			e.settled()
		}
		e.res.Echoes += (e.partial + n) / 8
		e.partial = (e.partial + n) % 8
	}
}

// send writes a client's next sequence number.
func (e *liveEnd) send() {
	e.seq++
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], e.seq)
	e.write(msg[:])
}

// write sends b after anything still unsent, keeping what the socket
// refuses. It allocates only then, so the loop gives the collector no work.
func (e *liveEnd) write(b []byte) {
	if len(e.unsent) > 0 {
		e.unsent = append(e.unsent, b...)
		b = e.unsent
	}
	for len(b) > 0 {
		n, err := rawIO(syscall.SYS_WRITE, e.fd, b)
		switch {
		case errors.Is(err, unix.EAGAIN):
			if len(b) > maxUnsent {
				e.err = fmt.Errorf("write: %d bytes unsent, the peer reads nothing", len(b))
			}
			e.unsent = append(e.unsent[:0], b...)
			return
		case err != nil:
			e.err = fmt.Errorf("write: %w", err)
			return
		}
		b = b[n:]
	}
	e.unsent = e.unsent[:0]
}

// finish writes a client's result: alive if it never failed and its last
// echo is recent.
func (e *liveEnd) finish(now time.Time) {
	e.settled() // a connection that never echoed settles as it ends
	gap := max(e.maxGap, now.Sub(e.last))
	e.res.MaxGapMs = float64(gap.Microseconds()) / 1000
	e.res.MaxGapEnded = e.ended
	if e.err != nil {
		e.res.Error = e.err.Error()
		return
	}
	e.res.Alive = now.Sub(e.last) < aliveWithin
	if !e.res.Alive {
		e.res.Error = fmt.Sprintf("no echo for %s at the end", now.Sub(e.last).Round(time.Millisecond))
	}
}

// rawIO reads or writes without telling the Go scheduler, so the thread
// keeps its processor (the socket is non-blocking: it never waits). A call
// a signal interrupted is made again.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	for {
		n, _, errno := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}

// epollWait waits at most timeout milliseconds, keeping the processor.
func epollWait(epfd int, events []unix.EpollEvent, timeout int) (int, error) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(timeout), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
