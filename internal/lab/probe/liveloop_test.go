package probe

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const holdFor = 80 * time.Millisecond

func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go acceptLoop(l, serve)
	return l.Addr().String()
}

// carry runs one long-lived connection to addr (through relay, when set, a
// stand-in for the network between) for d and returns its result.
func carry(t *testing.T, d time.Duration, relay func(server string) string) (LongLived, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	loop := newLiveLoop(5 * time.Millisecond)
	go loop.run(ctx)
	addr := listen(t, loop.serveEcho)
	if relay != nil {
		addr = relay(addr)
	}
	cfg := Config{InNetns: func(_ string, fn func() error) error { return fn() }}
	var res LongLived
	settled := make(chan struct{})
	var once atomic.Bool
	longLived(cfg, loop, Pod{Name: "a"}, Pod{Name: "b"}, addr, &res, func() {
		if once.CompareAndSwap(false, true) {
			close(settled)
		}
	})
	<-loop.done
	select {
	case <-settled:
	default:
		t.Error("the connection never settled")
	}
	return res, loop.realtime
}

// relayHolding relays a connection, holding each client message for what
// hold says (n is the message's number, since how long ago the relay began),
// as a network that stops for a while.
func relayHolding(t *testing.T, hold func(n int, since time.Duration) time.Duration) func(string) string {
	return func(server string) string {
		return listen(t, func(c net.Conn) {
			up, err := net.Dial("tcp", server)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(c, up) }()
			start := time.Now()
			msg := make([]byte, 8)
			for n := 0; ; n++ {
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				time.Sleep(hold(n, time.Since(start)))
				if _, err := up.Write(msg); err != nil {
					return
				}
			}
		})
	}
}

// holdOnce holds the 20th message of the client for holdFor.
func holdOnce(t *testing.T) func(string) string {
	return relayHolding(t, func(n int, _ time.Duration) time.Duration {
		if n == 20 {
			return holdFor
		}
		return 0
	})
}

func TestLiveLoopCarriesAConnection(t *testing.T) {
	res, realtime := carry(t, 500*time.Millisecond, nil)
	if !res.Alive || res.Error != "" {
		t.Fatalf("connection: %+v", res)
	}
	// A message every 5 ms for half a second, the first after the dial.
	if res.Echoes < 60 || res.Echoes > 101 {
		t.Errorf("%d echoes in 500 ms at one every 5 ms", res.Echoes)
	}
	if realtimeAllowed() && !realtime {
		t.Error("the kernel grants this process real time, but the loop does not run so")
	}
	t.Logf("longest gap %.1f ms, %d echoes, real time %v", res.MaxGapMs, res.Echoes, realtime)
}

func TestLiveLoopMeasuresWhatTheNetworkHolds(t *testing.T) {
	res, _ := carry(t, 600*time.Millisecond, holdOnce(t))
	if !res.Alive {
		t.Fatalf("connection: %+v", res)
	}
	if res.MaxGapMs < float64(holdFor.Milliseconds()) {
		t.Fatalf("longest gap %.1f ms while the network held a message %v", res.MaxGapMs, holdFor)
	}
	if res.MaxGapEnded.IsZero() {
		t.Error("the longest gap has no end time")
	}
}

func TestLiveLoopReportsADeadConnection(t *testing.T) {
	res, _ := carry(t, 400*time.Millisecond, func(server string) string {
		return listen(t, func(c net.Conn) {
			time.Sleep(50 * time.Millisecond)
			_ = c.(*net.TCPConn).SetLinger(0) // a reset, as from a peer that lost the connection
		})
	})
	if res.Alive || !strings.Contains(res.Error, "connection reset") {
		t.Fatalf("a reset connection is reported %+v", res)
	}
}

// TestLiveLoopGivesASilentConnectionItsGrace: a connection the network
// stalls across the probe's end is alive once it echoes again within the
// grace, and dead when it does not; the loop does not wait past the grace.
func TestLiveLoopGivesASilentConnectionItsGrace(t *testing.T) {
	// Holds the first message after 250 ms for hold: from before the end to after it.
	stallAcrossTheEnd := func(hold time.Duration) func(string) string {
		stalled := false
		return relayHolding(t, func(_ int, since time.Duration) time.Duration {
			if stalled || since < 250*time.Millisecond {
				return 0
			}
			stalled = true
			return hold
		})
	}
	for _, c := range []struct {
		grace, hold time.Duration
		alive       bool
	}{{3 * time.Second, 3 * time.Second, true}, {time.Second, 5 * time.Second, false}} {
		// Silent for 2.25 s at the end: past aliveWithin.
		const end = 2500 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), end)
		loop := newLiveLoop(5 * time.Millisecond)
		loop.endGrace = c.grace
		start := time.Now()
		go loop.run(ctx)
		addr := stallAcrossTheEnd(c.hold)(listen(t, loop.serveEcho))
		cfg := Config{InNetns: func(_ string, fn func() error) error { return fn() }}
		var res LongLived
		longLived(cfg, loop, Pod{Name: "a"}, Pod{Name: "b"}, addr, &res, func() {})
		<-loop.done
		cancel()
		took := time.Since(start)
		if res.Alive != c.alive || took > end+c.grace+time.Second {
			t.Errorf("grace %v, stall %v: alive %v (%s) after %v; want alive %v, within the grace", c.grace, c.hold, res.Alive, res.Error, took, c.alive)
		}
	}
}

// realtimeAllowed says whether a thread of this process may run SCHED_FIFO
// (root, and a cgroup with a real-time budget where the kernel asks for one).
func realtimeAllowed() bool {
	ok := make(chan bool)
	go func() {
		ok <- RealtimeThread()
	}()
	return <-ok
}

func TestLiveLoopRefusesAConnectionAfterItsEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	loop := newLiveLoop(5 * time.Millisecond)
	go loop.run(ctx)
	addr := listen(t, loop.serveEcho)
	cancel()
	<-loop.done
	cfg := Config{InNetns: func(_ string, fn func() error) error { return fn() }}
	var res LongLived
	settled := false
	longLived(cfg, loop, Pod{Name: "a"}, Pod{Name: "b"}, addr, &res, func() { settled = true })
	if res.Alive || !strings.Contains(res.Error, "ended before the connection was up") || !settled {
		t.Fatalf("a connection up after the end: %+v, settled %v", res, settled)
	}
}
