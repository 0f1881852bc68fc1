package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sys/unix"
)

// ClockSample is one round trip to the operator's time endpoint.
type ClockSample struct {
	Sent, Received time.Time // by the agent's clock
	Server         time.Time // the operator's clock, somewhere in between
}

// EstimateOffset is Cristian's method over several round trips: the sample
// with the shortest round trip gives the offset of the local clock from the
// server's (positive: local ahead), assuming the server read its clock half
// way, and the bound is half that round trip: the true offset lies within
// offset ± bound.
func EstimateOffset(samples []ClockSample) (offset, bound time.Duration, err error) {
	if len(samples) == 0 {
		return 0, 0, fmt.Errorf("no sample")
	}
	best := samples[0]
	for _, s := range samples[1:] {
		if s.Received.Sub(s.Sent) < best.Received.Sub(best.Sent) {
			best = s
		}
	}
	rtt := best.Received.Sub(best.Sent)
	if rtt < 0 {
		return 0, 0, fmt.Errorf("negative round trip: the local clock jumped")
	}
	mid := best.Sent.Add(rtt / 2)
	return mid.Sub(best.Server), rtt / 2, nil
}

// clockVerdict says what a measured offset shows against the allowed skew.
type clockVerdict int

const (
	clockWithin       clockVerdict = iota // |offset| + bound <= max: the clocks agree
	clockOff                              // |offset| - bound > max: they certainly do not
	clockInconclusive                     // the round trips were too slow to tell
)

// judgeClock is the verdict on offset ± bound against max.
func judgeClock(offset, bound, max time.Duration) clockVerdict {
	switch {
	case offset.Abs()+bound <= max:
		return clockWithin
	case offset.Abs()-bound > max:
		return clockOff
	default:
		return clockInconclusive
	}
}

// newClockClient is one clock check's own connection to the time endpoint.
// A round trip that opens a connection is slower, and lopsided (the server
// reads its clock after the handshake), so every round after the first
// should reuse one. The process's shared transport keeps only two idle
// connections a host: where many agents check at once in one process (the
// scale simulation) they would dial again for nearly every sample.
func newClockClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// measureClock takes n samples from the operator's time endpoint, reading
// the local clock with now.
func measureClock(ctx context.Context, client *http.Client, url string, n int, now func() time.Time) ([]ClockSample, error) {
	var out []ClockSample
	for range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		sent := now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("operator time endpoint %s: %w", url, err)
		}
		var body struct {
			UnixNano int64 `json:"unixNano"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		received := now()
		if err != nil {
			return nil, fmt.Errorf("operator time endpoint %s: %w", url, err)
		}
		out = append(out, ClockSample{Sent: sent, Received: received, Server: time.Unix(0, body.UnixNano)})
	}
	return out, nil
}

// kernelClockSynced reports whether the kernel says its clock is synchronized
// (NTP): a warning, not a failure, when it is not.
func kernelClockSynced() (bool, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return false, err
	}
	return state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0, nil
}
