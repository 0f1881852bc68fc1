package lab

import (
	"io"
	"testing"
	"time"
)

func TestMigrateOptionsNameTheFlagAndItsRange(t *testing.T) {
	good := MigrateOptions{Count: 10, Pause: 20 * time.Millisecond, Interval: 2 * time.Millisecond, DatapathNice: -10}
	if err := good.Validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for _, vm := range []string{"", VMNetns, VMQEMU} {
		o := good
		o.VM = vm
		if err := o.Validate(); err != nil {
			t.Errorf("--vm %q refused: %v", vm, err)
		}
	}
	with := func(edit func(*MigrateOptions)) MigrateOptions {
		o := good
		edit(&o)
		return o
	}
	for want, o := range map[string]MigrateOptions{
		`--vm: "kvm" is not netns or qemu`:       with(func(o *MigrateOptions) { o.VM = "kvm" }),
		"--count: 0 is outside 1..100":           with(func(o *MigrateOptions) { o.Count = 0 }),
		"--pause: 6s is outside 0..5s":           with(func(o *MigrateOptions) { o.Pause = 6 * time.Second }),
		"--downtime-limit: 3s is outside 0..2s":  with(func(o *MigrateOptions) { o.DowntimeLimit = 3 * time.Second }),
		"--interval: 0s is outside 1ms..100ms":   with(func(o *MigrateOptions) { o.Interval = 0 }),
		"--datapath-nice: 5 is outside -20..0":   with(func(o *MigrateOptions) { o.DatapathNice = 5 }),
		"--datapath-nice: -21 is outside -20..0": with(func(o *MigrateOptions) { o.DatapathNice = -21 }),
	} {
		if err := o.Validate(); err == nil || err.Error() != want {
			t.Errorf("Validate(%+v) = %v, want %q", o, err, want)
		}
	}
}

func TestMedianAndMax(t *testing.T) {
	for _, tc := range []struct {
		xs           []float64
		p50, largest float64
	}{
		{nil, 0, 0},
		{[]float64{7}, 7, 7},
		{[]float64{9, 1, 5}, 5, 9},
		{[]float64{4, 1, 3, 2}, 3, 4}, // the upper middle of an even count
	} {
		if p50, largest := medianAndMax(tc.xs); p50 != tc.p50 || largest != tc.largest {
			t.Errorf("medianAndMax(%v) = %v, %v; want %v, %v", tc.xs, p50, largest, tc.p50, tc.largest)
		}
	}
}

// TestCountSplitsAMigrationsDatagrams: a migration's datagrams are split at
// the stop and the resume; the last one sent before the stop, unanswered,
// was on its way and counts as reaching the stopped VM; what may be lost
// while stopped is what was sent in the hypervisor's downtime, plus one.
func TestCountSplitsAMigrationsDatagrams(t *testing.T) {
	every := func(n int) []time.Duration {
		d := make([]time.Duration, n)
		for i := range d {
			d[i] = time.Duration(i+1) * 20 * time.Millisecond
		}
		return d
	}
	sent := every(16)
	answered := func(lost ...int) []time.Duration {
		e := make([]time.Duration, len(sent))
		for i := range e {
			e[i] = sent[i] + time.Millisecond
		}
		for _, i := range lost {
			e[i] = 0
		}
		return e
	}
	m := &migration{o: MigrateOptions{VM: VMQEMU, Progress: io.Discard}}
	for _, tc := range []struct {
		name                                 string
		echoed                               []time.Duration
		downtime                             int // the first datagram of the downtime before the resume (8)
		downtimeMs                           float64
		before, stopped, sentStopped, resume int
		bound, over                          int
	}{
		{"the one on its way at the stop", answered(4, 5, 6, 7), 5, 60, 0, 4, 4, 0, 4, 0},
		{"nothing on its way", answered(5, 6, 7), 5, 60, 0, 3, 3, 0, 4, 0},
		{"more lost than the downtime lets", answered(4, 5, 6, 7), 6, 40, 0, 4, 4, 0, 3, 1},
		{"lost while the VM ran, and after the resume", answered(2, 5, 9), 5, 60, 1, 1, 3, 1, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var figs MigrationFigures
			// Datagram i is sent at (i+1)*20 ms, the resume at 160 ms.
			w := window{start: 0, stop: 5, resume: 8, completion: 12, downtime: tc.downtime, resumeAt: 160 * time.Millisecond, res: MigrationResult{DowntimeMs: tc.downtimeMs, ReadyBeforeResume: true}}
			m.count([]window{w}, sent, tc.echoed, nil, len(sent), "per-port", 1, &figs)
			r := figs.Each[0]
			if r.LostBeforeResume != tc.before || r.LostWhileStopped != tc.stopped || r.SentWhileStopped != tc.sentStopped ||
				r.LostAtResume != tc.resume || r.StoppedBound != tc.bound || figs.OverStoppedBound != tc.over {
				t.Errorf("before %d, stopped %d of %d (may %d), at resume %d, over the bound %d; want %d, %d of %d (may %d), %d, %d",
					r.LostBeforeResume, r.LostWhileStopped, r.SentWhileStopped, r.StoppedBound, r.LostAtResume, figs.OverStoppedBound,
					tc.before, tc.stopped, tc.sentStopped, tc.bound, tc.resume, tc.over)
			}
			if len(r.LostAtResumeSentMs) != r.LostAtResume || (r.LostAtResume > 0 && r.LostAtResumeSentMs[0] != 40) {
				t.Errorf("lost at the resume sent %v ms after it, want %d of them, the first (datagram 9) 40 ms after the resume", r.LostAtResumeSentMs, r.LostAtResume)
			}
			if r.Lost != r.LostBeforeResume+r.LostWhileStopped+r.LostAtResume+r.LostAtCompletion || figs.NotReadyBeforeResume != 0 {
				t.Errorf("lost %d is not the sum of its windows, or %d not ready", r.Lost, figs.NotReadyBeforeResume)
			}
		})
	}
}

// A datagram answered twice counts in the migration whose datagrams it is
// among, and in its mode's figures; the next migration's do not.
func TestCountAnswersTwiceByMigration(t *testing.T) {
	sent := make([]time.Duration, 20)
	echoed := make([]time.Duration, 20)
	for i := range sent {
		sent[i] = time.Duration(i+1) * 20 * time.Millisecond
		echoed[i] = sent[i] + time.Millisecond
	}
	m := &migration{o: MigrateOptions{VM: VMQEMU, Progress: io.Discard}}
	var figs MigrationFigures
	windows := []window{
		{start: 0, stop: 3, resume: 5, completion: 7, downtime: 4, res: MigrationResult{ReadyBeforeResume: true}},
		{start: 10, stop: 13, resume: 15, completion: 17, downtime: 14, resumeAt: 300 * time.Millisecond, res: MigrationResult{ReadyBeforeResume: true}},
	}
	m.count(windows, sent, echoed, map[int]int{2: 1, 9: 2, 12: 1}, len(sent), "per-port", 1, &figs)
	if got := []int{figs.Each[0].EchoedTwice, figs.Each[1].EchoedTwice, figs.EchoedTwice}; got[0] != 3 || got[1] != 1 || got[2] != 4 {
		t.Errorf("answered twice: %v by migration, then in all; want [3 1 4]", got)
	}
	if got := figs.Each[1].EchoedTwiceSentMs; len(got) != 1 || got[0] != 260-300 {
		t.Errorf("the second migration's datagram answered twice was sent %v ms after the resume, want [-40] (datagram 12 at 260 ms, the resume at 300)", got)
	}
}
