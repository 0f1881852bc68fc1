package agent

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

func TestEstimateOffset(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	// The node is 200 ms ahead; round trips of 10, 4 and 30 ms: the 4 ms one is trusted.
	samples := []ClockSample{
		{Sent: base.Add(200 * ms), Received: base.Add(210 * ms), Server: base.Add(3 * ms)},
		{Sent: base.Add(300 * ms), Received: base.Add(304 * ms), Server: base.Add(102 * ms)},
		{Sent: base.Add(400 * ms), Received: base.Add(430 * ms), Server: base.Add(200 * ms)},
	}
	off, bound, err := EstimateOffset(samples)
	if err != nil || off != 200*ms || bound != 2*ms {
		t.Fatalf("offset %s ± %s (%v), want 200ms ± 2ms", off, bound, err)
	}
	// The true offset is within the bound whatever the server's delay split.
	off, bound, _ = EstimateOffset([]ClockSample{{Sent: base, Received: base.Add(20 * ms), Server: base.Add(-5*ms + 19*ms)}})
	if trueOff := 5 * ms; (off - trueOff).Abs() > bound {
		t.Fatalf("offset %s ± %s does not contain the true %s", off, bound, trueOff)
	}
	if _, _, err := EstimateOffset(nil); err == nil {
		t.Fatal("no samples: no estimate")
	}
	if _, _, err := EstimateOffset([]ClockSample{{Sent: base.Add(ms), Received: base}}); err == nil {
		t.Fatal("a negative round trip is refused")
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
