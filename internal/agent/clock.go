package agent

import (
	"context"
	"encoding/json"
	"errors"
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

// errClockSamplesDisagree is round trips that cannot all hold.
var errClockSamplesDisagree = errors.New("the round trips disagree")

// maxClockDrift is how far apart the rates of two clocks may drift during a
// check: 1,000 ppm, two clocks each 500 ppm off, the most the kernel's NTP
// discipline corrects (a clock slewed faster, or stepped, shows as round trips
// that disagree, and the check starts over).
const maxClockDrift = 1000e-6

// EstimateOffset bounds the local clock's offset from the server's (positive:
// local ahead) from round trips. The server read its clock somewhere between
// a sample's Sent and Received, so each sample says the offset lies between
// Sent-Server and Received-Server; every sample holds at once, so the offset
// lies where they all overlap, each widened by how far the clocks' rates may
// have drifted apart since it was sent. offset is the middle of that overlap
// (at the latest sample) and bound half its width: the true offset lies
// within offset ± bound.
//
// One sample alone gives Cristian's method (the middle of its round trip,
// ± half of it); several give less than their fastest, give or take the drift,
// when the delays fell on different sides: on a busy node, or a busy operator,
// no round trip may be fast, yet some are quick on the way out and others on
// the way back.
func EstimateOffset(samples []ClockSample) (offset, bound time.Duration, err error) {
	if len(samples) == 0 {
		return 0, 0, fmt.Errorf("no sample")
	}
	latest := samples[0].Received
	for _, s := range samples[1:] {
		if s.Received.After(latest) {
			latest = s.Received
		}
	}
	var lo, hi time.Duration
	for i, s := range samples {
		if s.Received.Before(s.Sent) {
			return 0, 0, fmt.Errorf("negative round trip: the local clock jumped")
		}
		drift := time.Duration(float64(latest.Sub(s.Sent)) * maxClockDrift)
		from, to := s.Sent.Sub(s.Server)-drift, s.Received.Sub(s.Server)+drift
		if i == 0 {
			lo, hi = from, to
			continue
		}
		lo, hi = max(lo, from), min(hi, to)
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("%w by %s (a clock was stepped, or the time endpoint moved to another operator)", errClockSamplesDisagree, lo-hi)
	}
	return lo + (hi-lo)/2, (hi - lo) / 2, nil
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
		if body.UnixNano <= 0 {
			return nil, fmt.Errorf("operator time endpoint %s: no time in its answer (unixNano %d)", url, body.UnixNano)
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
