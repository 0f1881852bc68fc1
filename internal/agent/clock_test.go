package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

func TestEstimateOffset(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	us := time.Microsecond
	// The node is 200 ms ahead; round trips of 10, 4 and 30 ms. Alone, the 4 ms one would
	// say 200 ms ± 2 ms; the 30 ms one was quick on the way out (the server read its clock
	// right away), which narrows the overlap to [199.97, 202.13] ms: each sample is widened by
	// 1,000 ppm of the time from its request to the last answer (130 µs for the 4 ms one, 30 µs
	// for the last).
	samples := []ClockSample{
		{Sent: base.Add(200 * ms), Received: base.Add(210 * ms), Server: base.Add(3 * ms)},
		{Sent: base.Add(300 * ms), Received: base.Add(304 * ms), Server: base.Add(102 * ms)},
		{Sent: base.Add(400 * ms), Received: base.Add(430 * ms), Server: base.Add(200 * ms)},
	}
	off, bound, err := EstimateOffset(samples)
	if err != nil || off != 201*ms+50*us || bound != 1*ms+80*us {
		t.Fatalf("offset %s ± %s (%v), want 201.05ms ± 1.08ms", off, bound, err)
	}
	// One sample alone is Cristian's: the middle of its round trip, ± half of it (and of the
	// drift over it).
	off, bound, _ = EstimateOffset(samples[1:2])
	if off != 200*ms || bound != 2*ms+4*us {
		t.Fatalf("one sample: offset %s ± %s, want 200ms ± 2.004ms", off, bound)
	}
	// Slow round trips whose delays fell on different sides still tell: 100 ms each, one slow
	// back, one slow out, the true offset 7 ms.
	slow := []ClockSample{
		{Sent: base, Received: base.Add(100 * ms), Server: base.Add(-7*ms + 1*ms)},
		{Sent: base.Add(time.Second), Received: base.Add(time.Second + 100*ms), Server: base.Add(time.Second - 7*ms + 99*ms)},
	}
	off, bound, _ = EstimateOffset(slow)
	if (off-7*ms).Abs() > bound || bound > 2*ms {
		t.Fatalf("slow, lopsided round trips: offset %s ± %s, want 7ms within ± 2ms", off, bound)
	}
	// The true offset is within the bound whatever the server's delay split, and however the
	// clocks drift apart within 1,000 ppm: a node 5 ms ahead, gaining or losing 900 µs a second.
	for _, rate := range []time.Duration{900 * us, -900 * us} {
		var drifting []ClockSample
		for i := range 20 {
			sent := base.Add(time.Duration(i) * time.Second)
			trueOff := 5*ms + time.Duration(i)*rate
			split := time.Duration(i*7%20) * ms // where in the 20 ms round trip the server read
			drifting = append(drifting, ClockSample{Sent: sent, Received: sent.Add(20 * ms), Server: sent.Add(split - trueOff)})
		}
		off, bound, err = EstimateOffset(drifting)
		if trueOff := 5*ms + 19*rate; err != nil || (off-trueOff).Abs() > bound {
			t.Fatalf("clocks drifting %s a second: offset %s ± %s (%v) does not contain the latest true %s", rate, off, bound, err, trueOff)
		}
	}
	if _, _, err := EstimateOffset(nil); err == nil {
		t.Fatal("no samples: no estimate")
	}
	if _, _, err := EstimateOffset([]ClockSample{{Sent: base.Add(ms), Received: base}}); err == nil {
		t.Fatal("a negative round trip is refused")
	}
	// A clock stepped by a second between two samples: they cannot both hold.
	stepped := []ClockSample{
		{Sent: base, Received: base.Add(2 * ms), Server: base.Add(ms)},
		{Sent: base.Add(10 * ms), Received: base.Add(12 * ms), Server: base.Add(time.Second + 11*ms)},
	}
	if _, _, err := EstimateOffset(stepped); !errors.Is(err, errClockSamplesDisagree) || !strings.Contains(err.Error(), "stepped") {
		t.Fatalf("a stepped clock: %v, want the samples to disagree", err)
	}
}

func TestJudgeClock(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		offset, bound time.Duration
		want          clockVerdict
	}{
		{0, 0, clockWithin},
		{-20 * ms, 30 * ms, clockWithin},
		{50 * ms, 0, clockWithin},
		{-22 * ms, 34 * ms, clockInconclusive}, // a slow round trip: cannot tell yet
		{40 * ms, 20 * ms, clockInconclusive},
		{200 * ms, 2 * ms, clockOff},
		{-200 * ms, 100 * ms, clockOff},
		{71 * ms, 20 * ms, clockOff},
	} {
		if got := judgeClock(c.offset, c.bound, 50*ms); got != c.want {
			t.Errorf("offset %s ± %s against 50ms: verdict %d, want %d", c.offset, c.bound, got, c.want)
		}
	}
}

// TestClockWaitsForTheOperatorsReturn: right after an operator restart its
// time endpoint refuses connections until the new leader serves it; the
// check waits for it rather than failing the change.
func TestClockWaitsForTheOperatorsReturn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nobody listens there: the operator is down
	served := make(chan struct{})
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]int64{"unixNano": time.Now().UnixNano()})
	})}
	defer srv.Close()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		close(served)
		_ = srv.Serve(l)
	}()
	a := &Agent{now: time.Now, MaxClockSkew: 50 * time.Millisecond}
	var r v1alpha1.LiveChangeReport
	a.checkClock(context.Background(), &r, "http://"+addr+"/time", 0)
	select {
	case <-served:
	default:
		t.Fatal("the check ended before the endpoint came back")
	}
	if len(r.Problems) != 0 || r.ClockOffsetMicros == nil {
		t.Fatalf("report %+v: want the clock measured once the endpoint is back", r)
	}
}

// TestEachClockCheckKeepsOneConnection: when many agents check at once (a
// scale run holds thousands in one process), each takes its samples over one
// connection of its own, and leaves none open behind it. A round trip that
// dials is slower and lopsided, and enough of them left whole changes
// failing their preconditions as "too slow to tell".
func TestEachClockCheckKeepsOneConnection(t *testing.T) {
	var mu sync.Mutex
	opened, closed := 0, 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]int64{"unixNano": time.Now().UnixNano()})
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			opened++
		case http.StateClosed, http.StateHijacked:
			closed++
		}
	}
	srv.Start()
	defer srv.Close()
	const agents = 40
	var wg sync.WaitGroup
	reports := make([]v1alpha1.LiveChangeReport, agents)
	for i := range agents {
		wg.Go(func() {
			a := &Agent{now: time.Now, MaxClockSkew: 50 * time.Millisecond}
			a.checkClock(context.Background(), &reports[i], srv.URL+"/time", 100*time.Millisecond)
		})
	}
	wg.Wait()
	for i, r := range reports {
		if len(r.Problems) != 0 || r.ClockOffsetMicros == nil {
			t.Fatalf("agent %d: report %+v, want its clock measured", i, r)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		o, c := opened, closed
		mu.Unlock()
		if o > agents {
			t.Fatalf("%d agents checking at once opened %d connections: at most one each", agents, o)
		}
		if c == o {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d connections the checks opened are still open after them", o-c, o)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClockRetriesThinOut: the rounds of an agent that could not tell come
// further apart, up to 4 s, and are spread (no two agents in step).
func TestClockRetriesThinOut(t *testing.T) {
	for round, ceiling := range []time.Duration{400, 800, 1600, 3200, 4000, 4000, 4000} {
		ceiling *= time.Millisecond
		lo, hi := time.Hour, time.Duration(0)
		for range 200 {
			p := clockRetryPause(round)
			lo, hi = min(lo, p), max(hi, p)
		}
		if lo < ceiling/2 || hi > ceiling || hi-lo < ceiling/4 {
			t.Errorf("round %d: pauses from %s to %s, want spread between %s and %s", round, lo, hi, ceiling/2, ceiling)
		}
	}
}
