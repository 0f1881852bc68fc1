package lab

import (
	"testing"
	"time"
)

func TestExchangeFigures(t *testing.T) {
	ms := time.Millisecond
	// Every 2 ms a datagram; 3 and 4 lost; 5 answered late (at 20 ms).
	sent := []time.Duration{0, 2 * ms, 4 * ms, 6 * ms, 8 * ms, 10 * ms, 12 * ms}
	echoed := []time.Duration{1 * ms, 3 * ms, 5 * ms, 0, 0, 20 * ms, 13 * ms}
	lost, gap := exchangeFigures(sent, echoed, 0, len(sent))
	if lost != 2 {
		t.Errorf("lost %d, want 2", lost)
	}
	// Datagram 3 (sent at 6 ms) waited until the echo of 6 at 13 ms: 7 ms...
	// ...but 5's echo at 20 ms is later than 6's at 13 ms, so 5 waited only 3 ms.
	if gap != 7*ms {
		t.Errorf("gap %s, want 7ms (datagram 3 to the echo of 6)", gap)
	}
	// A window of its own: only datagrams 3 and 4; later echoes still count.
	lost, gap = exchangeFigures(sent, echoed, 3, 5)
	if lost != 2 || gap != 7*ms {
		t.Errorf("window [3,5): lost %d gap %s", lost, gap)
	}
	// The tail unanswered: no gap can be measured past the last echo, but the loss counts.
	lost, _ = exchangeFigures([]time.Duration{0, 2 * ms}, []time.Duration{1 * ms, 0}, 0, 2)
	if lost != 1 {
		t.Errorf("tail: lost %d", lost)
	}
}

func TestMigrateOptionsNameTheFlagAndItsRange(t *testing.T) {
	good := MigrateOptions{Count: 10, Pause: 20 * time.Millisecond, Interval: 2 * time.Millisecond, DatapathNice: -10}
	if err := good.Validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for want, o := range map[string]MigrateOptions{
		"--count: 0 is outside 1..100":           {Count: 0, Pause: good.Pause, Interval: good.Interval},
		"--pause: 6s is outside 0..5s":           {Count: 1, Pause: 6 * time.Second, Interval: good.Interval},
		"--interval: 0s is outside 1ms..100ms":   {Count: 1, Pause: good.Pause},
		"--datapath-nice: 5 is outside -20..0":   {Count: 1, Pause: good.Pause, Interval: good.Interval, DatapathNice: 5},
		"--datapath-nice: -21 is outside -20..0": {Count: 1, Pause: good.Pause, Interval: good.Interval, DatapathNice: -21},
	} {
		if err := o.Validate(); err == nil || err.Error() != want {
			t.Errorf("Validate(%+v) = %v, want %q", o, err, want)
		}
	}
}
