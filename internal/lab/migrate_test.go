package lab

import (
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
