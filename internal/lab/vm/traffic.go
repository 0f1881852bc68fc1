package vm

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/plug"
)

// Traffic is the measured exchange between a VM and its peer: numbered
// datagrams from one end (the sender) every interval, each echoed back by
// the other; every send and echo time is kept, so losses and gaps are
// counted by sequence number afterwards. The namespace VM sends and its peer
// answers; with QEMU the peer sends and the guest's own program answers. The
// sender (and the answering socket, when it is the lab's) are carried by one
// thread of their own, real time where the kernel grants it, that never
// waits for the Go scheduler (raw system calls, its processor kept), as the
// probe's long-lived connections are: a gap it measures is the network's,
// not a wait of the lab's own threads for a processor while the nodes'
// daemons work.
type Traffic struct {
	sock     int // the sender's socket (owned)
	echo     int // the socket this thread answers on, or -1 (not owned)
	dst      unix.SockaddrInet4
	interval time.Duration
	start    time.Time
	// realtime: the thread got SCHED_FIFO.
	realtime bool

	mu       sync.Mutex
	paused   bool
	sent     []time.Duration // by sequence number, since start
	echoed   []time.Duration // 0: no echo (yet)
	repeats  map[int]int     // the echoes after a datagram's first, by sequence number
	stopping atomic.Bool
	done     chan struct{}
}

// EchoPort is where the answering end listens.
const EchoPort = 7000

// OpenUDP opens a non-blocking UDP socket bound to port inside netns.
func OpenUDP(netns string, port int) (int, error) {
	var fd int
	err := netdev.InNetns(netns, func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if err = unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err != nil {
			unix.Close(fd)
		}
		return err
	})
	return fd, err
}

// OpenEcho opens an answering socket inside a namespace; a Traffic's
// thread answers on it.
func OpenEcho(netns string) (int, error) {
	fd, err := OpenUDP(netns, EchoPort)
	if err != nil {
		return -1, fmt.Errorf("VM peer in %s: %w", netns, err)
	}
	return fd, nil
}

// StartTraffic opens the sender's socket inside netns (the socket stays there
// while a namespace VM's interface is replaced) and starts sending to dstIP's
// EchoPort; the thread also answers on echo unless it is -1.
func StartTraffic(netns, dstIP string, echo int, interval time.Duration) (*Traffic, error) {
	ip := net.ParseIP(dstIP).To4()
	if ip == nil {
		return nil, fmt.Errorf("traffic to %q: not an IPv4 address", dstIP)
	}
	fd, err := OpenUDP(netns, 0)
	if err != nil {
		return nil, fmt.Errorf("traffic from %s: %w", netns, err)
	}
	v := &Traffic{sock: fd, echo: echo, dst: unix.SockaddrInet4{Port: EchoPort, Addr: [4]byte(ip)}, interval: interval, start: time.Now(), done: make(chan struct{})}
	started := make(chan struct{})
	go v.run(started)
	<-started
	return v, nil
}

// run sends each datagram when it is due, answers at the peer's end, and
// times each echo as it arrives, until stopping. It holds its thread and one
// processor of the Go runtime for the run.
func (v *Traffic) run(started chan<- struct{}) {
	defer close(v.done)
	v.realtime = probe.RealtimeThread()
	close(started)
	fds := []unix.PollFd{{Fd: int32(v.sock), Events: unix.POLLIN}}
	if v.echo >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(v.echo), Events: unix.POLLIN})
	}
	buf := make([]byte, 64)
	due := time.Now()
	for !v.stopping.Load() {
		if now := time.Now(); !now.Before(due) {
			v.sendNext(buf)
			// A late wake sends once, not a burst: the VM sends every interval.
			if due = due.Add(v.interval); due.Before(now) {
				due = now
			}
		}
		ts := unix.NsecToTimespec(max(time.Until(due), 0).Nanoseconds())
		_, _, _ = syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		v.takeEchoes(buf)
		if v.echo >= 0 {
			v.answer(buf)
		}
	}
}

func (v *Traffic) sendNext(buf []byte) {
	v.mu.Lock()
	if v.paused {
		v.mu.Unlock()
		return
	}
	seq := len(v.sent)
	v.sent = append(v.sent, time.Since(v.start))
	v.echoed = append(v.echoed, 0)
	v.mu.Unlock()
	binary.BigEndian.PutUint64(buf, uint64(seq))
	_ = unix.Sendto(v.sock, buf[:8], unix.MSG_DONTWAIT, &v.dst) // a send that fails is a lost message like any other
}

// takeEchoes reads every echo waiting at the sender's socket.
func (v *Traffic) takeEchoes(buf []byte) {
	for {
		n, _, err := unix.Recvfrom(v.sock, buf, unix.MSG_DONTWAIT)
		if err != nil {
			return
		}
		if n < 8 {
			continue
		}
		seq := int(binary.BigEndian.Uint64(buf))
		now := time.Since(v.start)
		v.mu.Lock()
		switch {
		case seq >= len(v.echoed):
		case v.echoed[seq] == 0:
			v.echoed[seq] = now
		default:
			if v.repeats == nil {
				v.repeats = map[int]int{}
			}
			v.repeats[seq]++
		}
		v.mu.Unlock()
	}
}

// answer echoes every datagram waiting at the answering socket.
func (v *Traffic) answer(buf []byte) {
	for {
		n, from, err := unix.Recvfrom(v.echo, buf, unix.MSG_DONTWAIT)
		if err != nil {
			return
		}
		_ = unix.Sendto(v.echo, buf[:n], unix.MSG_DONTWAIT, from)
	}
}

// Next is the sequence number the next datagram will carry.
func (v *Traffic) Next() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.sent)
}

// EchoedSince counts the echoes of datagrams from seq on.
func (v *Traffic) EchoedSince(seq int) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for i := seq; i < len(v.echoed); i++ {
		if v.echoed[i] != 0 {
			n++
		}
	}
	return n
}

// Pause stops the sending, as a hypervisor stops a namespace VM's CPUs, and
// gives the datagrams already on their way up to wait to be answered.
func (v *Traffic) Pause(wait time.Duration) {
	v.mu.Lock()
	v.paused = true
	v.mu.Unlock()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		open := 0
		for i := len(v.echoed) - 1; i >= 0 && i >= len(v.echoed)-50; i-- {
			if v.echoed[i] == 0 {
				open++
			}
		}
		v.mu.Unlock()
		if open == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Resume sends again.
func (v *Traffic) Resume() {
	v.mu.Lock()
	v.paused = false
	v.mu.Unlock()
}

// Close stops sending, waits grace for late echoes, and returns the record:
// each datagram's send and echo time (0: none) since Started.
func (v *Traffic) Close(grace time.Duration) (sent, echoed []time.Duration) {
	v.mu.Lock()
	v.paused = true
	v.mu.Unlock()
	time.Sleep(grace)
	v.stopping.Store(true)
	<-v.done
	unix.Close(v.sock)
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]time.Duration(nil), v.sent...), append([]time.Duration(nil), v.echoed...)
}

// Repeats are the echoes that came after a datagram's first, by its
// sequence number: a datagram the network (or a migration) gave the answering
// end twice.
func (v *Traffic) Repeats() map[int]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.repeats)
}

// Started is when the first datagram was due: Close's times count from here.
func (v *Traffic) Started() time.Time { return v.start }

// Realtime says the thread got SCHED_FIFO.
func (v *Traffic) Realtime() bool { return v.realtime }

// SeqAt is the first datagram sent at or after t (Next if none yet).
func (v *Traffic) SeqAt(t time.Time) int {
	d := t.Sub(v.start)
	v.mu.Lock()
	defer v.mu.Unlock()
	i, _ := slices.BinarySearch(v.sent, d)
	return i
}

// WaitEchoes waits until n datagrams from since on were answered.
func (v *Traffic) WaitEchoes(since, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for v.EchoedSince(since) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d echoes within %s", v.EchoedSince(since), n, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// ExchangeFigures counts the datagrams in [from, to) that were never answered,
// and the longest time any of them waited for an answer to it or to a later
// one: the time the VM's traffic stood still.
func ExchangeFigures(sent, echoed []time.Duration, from, to int) (lost int, maxGap time.Duration) {
	to = min(to, len(sent))
	var nextEcho time.Duration // the earliest echo of a datagram at or after i
	for i := len(sent) - 1; i >= from; i-- {
		if echoed[i] != 0 && (nextEcho == 0 || echoed[i] < nextEcho) {
			nextEcho = echoed[i]
		}
		if i >= to {
			continue
		}
		if echoed[i] == 0 {
			lost++
		}
		if nextEcho != 0 && nextEcho-sent[i] > maxGap {
			maxGap = nextEcho - sent[i]
		}
	}
	return lost, maxGap
}

// Announce sends the RARP frames a hypervisor sends for a resumed VM (QEMU's
// self-announce: at once, then after 50, 150, 250 and 350 ms more), from
// inside the VM's namespace on its eth0. OVN's activation-strategy=rarp lets
// the target chassis pass the port's traffic once it sees one.
func Announce(netns string, mac net.HardwareAddr, stop <-chan struct{}) error {
	var fd, ifindex int
	err := netdev.InNetns(netns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(netdev.Htons(unix.ETH_P_ALL)))
		return err
	})
	if err != nil {
		return fmt.Errorf("VM in %s: RARP socket: %w", netns, err)
	}
	go func() {
		defer unix.Close(fd)
		frame := plug.RARPFrame(mac)
		to := &unix.SockaddrLinklayer{Ifindex: ifindex, Halen: 6, Protocol: netdev.Htons(0x8035)}
		copy(to.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		for _, wait := range []time.Duration{0, 50, 150, 250, 350} {
			select {
			case <-stop:
				return
			case <-time.After(wait * time.Millisecond):
			}
			_ = unix.Sendto(fd, frame, 0, to)
		}
	}()
	return nil
}
