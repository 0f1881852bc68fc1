package lab

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// The VMs a migration moves: the lab's namespace VM, or a real QEMU guest.
const (
	VMNetns = "netns"
	VMQEMU  = "qemu"
)

// MigrateOptions describe a run of `lab migrate`.
type MigrateOptions struct {
	// VM is what migrates: VMNetns (the default) or VMQEMU.
	VM string
	// Count is the number of migrations each way (node-1 to node-2 and back) per plug mode.
	Count int
	// Pause is how long the namespace VM is gone between its source tap going
	// and its target tap appearing: the same in both modes. QEMU chooses its
	// own downtime, within DowntimeLimit.
	Pause time.Duration
	// DowntimeLimit is the longest stop QEMU may choose for a migration's last copy.
	DowntimeLimit time.Duration
	// Interval is the time between the measured datagrams.
	Interval time.Duration
	// DatapathNice is the niceness of every node's ovs-vswitchd during the
	// run (0: the lab's own, left as it is). The lab's vswitchd is the data
	// path itself (userspace datapath): it forwards the nodes' packets in a
	// process that competes for the machine's cores with each node's
	// kubelet, agent and pods, whereas a real node's kernel datapath forwards
	// them ahead of every process. Raised to -10, the migrations' longest gaps
	// went over 50 ms in 1 of 120 migrations, against 5 of 120 at the lab's
	// weight (README, Benchmarks).
	DatapathNice int
	// Binaries is the directory of the lab's binaries (hack/build.sh's), where
	// the guest's answering program is.
	Binaries string
	// Progress receives a line per migration.
	Progress io.Writer
}

// Validate names the flag and the allowed range.
func (o MigrateOptions) Validate() error {
	switch {
	case o.VM != "" && o.VM != VMNetns && o.VM != VMQEMU:
		return fmt.Errorf("--vm: %q is not %s or %s", o.VM, VMNetns, VMQEMU)
	case o.Count < 1 || o.Count > 100:
		return fmt.Errorf("--count: %d is outside 1..100", o.Count)
	case o.Pause < 0 || o.Pause > 5*time.Second:
		return fmt.Errorf("--pause: %s is outside 0..5s", o.Pause)
	case o.DowntimeLimit < 0 || o.DowntimeLimit > 2*time.Second:
		return fmt.Errorf("--downtime-limit: %s is outside 0..2s", o.DowntimeLimit)
	case o.Interval < time.Millisecond || o.Interval > 100*time.Millisecond:
		return fmt.Errorf("--interval: %s is outside 1ms..100ms", o.Interval)
	case o.DatapathNice < -20 || o.DatapathNice > 0:
		return fmt.Errorf("--datapath-nice: %d is outside -20..0", o.DatapathNice)
	}
	return nil
}

// MigrationFigures are one plug mode's migrations.
type MigrationFigures struct {
	Migrations int `json:"migrations"`
	// Lost is the number of datagrams never answered, over the whole run in this mode
	// (from the moment each round's VM answered 20 datagrams, before its first migration).
	Lost int `json:"lost"`
	// Recomputed counts the rounds whose VM answered nothing for 5 s before
	// its first migration: OVN's view was recorded and every ovn-controller
	// made to recompute before the round waited again.
	Recomputed int `json:"recomputed,omitempty"`
	// LostBeforeResume, LostWhileStopped, LostAtResume and LostAtCompletion split the
	// migrations' losses (see MigrationResult).
	LostBeforeResume int `json:"lostBeforeResume"`
	LostWhileStopped int `json:"lostWhileStopped"`
	LostAtResume     int `json:"lostAtResume"`
	LostAtCompletion int `json:"lostAtCompletion"`
	// MaxGapMs is the longest time the traffic stood still (a datagram waiting for an answer).
	MaxGapMs float64 `json:"maxGapMs"`
	// HandOverMsP50 and HandOverMsMax are the time from the source pod's
	// deletion to the port bound on the target alone (its southbound binding:
	// the target the main chassis, no other, up), the median and the longest.
	HandOverMsP50 float64 `json:"handOverMsP50"`
	HandOverMsMax float64 `json:"handOverMsMax"`
	// DowntimeMsP50 and DowntimeMsMax are the hypervisor's own downtime (QEMU's query-migrate).
	DowntimeMsP50 float64 `json:"downtimeMsP50"`
	DowntimeMsMax float64 `json:"downtimeMsMax"`
	// StopToResumeMsP50 is the median time from the VM's stop on the source
	// to its resume on the target, from the hypervisor's events.
	StopToResumeMsP50 float64 `json:"stopToResumeMsP50,omitempty"`
	// ResumeGapMsP50 and ResumeGapMsMax are the migrations' ResumeGapMs: the
	// network's gap after the resume, beside the guest's own warm-up.
	ResumeGapMsP50 float64 `json:"resumeGapMsP50"`
	ResumeGapMsMax float64 `json:"resumeGapMsMax"`
	// OverStoppedBound counts the migrations that lost more datagrams while
	// the VM was stopped than their StoppedBound; NotReadyBeforeResume those
	// whose target was not reported ready before the VM resumed.
	OverStoppedBound     int `json:"overStoppedBound"`
	NotReadyBeforeResume int `json:"notReadyBeforeResume"`
	// EchoedTwice counts the answers to a datagram already answered (see MigrationResult).
	EchoedTwice int `json:"echoedTwice"`
	// Each is per migration.
	Each []MigrationResult `json:"each"`
	// GuestCrashes are the migrations whose guest died after its resume
	// (QEMU under TCG): neither a migration nor traffic of their round is counted.
	GuestCrashes []GuestCrash `json:"guestCrashes,omitempty"`
	// Sent is the number of datagrams sent in this mode.
	Sent int `json:"sent"`
	// Realtime says every round's traffic, and its echo, was carried by a
	// real-time thread: the gaps are the network's, none a wait of the lab's
	// own threads for a processor.
	Realtime bool `json:"realtime"`
}

// MigrationResult is one migration.
type MigrationResult struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Lost is the sum of the windows a migration's datagrams are split by:
	// LostBeforeResume from its start (its target prepared while the VM still
	// runs on the source) to the VM's stop; LostWhileStopped from the stop to
	// the resume (the VM's CPUs stopped: what reaches its old host then is
	// lost, at most the downtime times the rate, plus one), with, under QEMU,
	// the last datagram sent before the stop if it was lost (it was on its
	// way when the guest stopped); LostAtResume from the resume until the
	// source pod's deletion; and LostAtCompletion from that deletion (OVN
	// moves the port to the target alone) until the next migration starts.
	// The namespace VM sends nothing while stopped.
	Lost             int `json:"lost"`
	LostBeforeResume int `json:"lostBeforeResume"`
	LostWhileStopped int `json:"lostWhileStopped"`
	SentWhileStopped int `json:"sentWhileStopped"`
	// StoppedBound is what may be lost while the VM is stopped: the
	// datagrams sent in the hypervisor's downtime (its length, up to the
	// resume), plus one on its way at the stop (QEMU only; its downtime
	// spans the target's part of the stop too). Counted on the datagrams as
	// they were sent, it is the downtime times the rate, plus one, whatever
	// the sender's jitter.
	StoppedBound     int `json:"stoppedBound,omitempty"`
	LostAtResume     int `json:"lostAtResume"`
	LostAtCompletion int `json:"lostAtCompletion"`
	// EchoedTwice counts the answers to a datagram already answered: with
	// per-port plugging, one the source VM took before it stopped that the
	// target's agent also gave the resumed VM (it gives what reached the held
	// bridge in a window before the VM's first frame, longer than some stops).
	EchoedTwice int `json:"echoedTwice,omitempty"`
	// EchoedTwiceSentMs is when each datagram answered twice was sent, in ms
	// after the resume (negative: before it).
	EchoedTwiceSentMs []float64 `json:"echoedTwiceSentMs,omitempty"`
	// LostAtResumeSentMs is when each datagram lost at the resume was sent,
	// in ms after the resume.
	LostAtResumeSentMs []float64 `json:"lostAtResumeSentMs,omitempty"`
	// GapMs is the longest time a datagram of the migration waited for an
	// answer, and GapAt where that datagram was sent: "prepared", "stopped",
	// "resume" or "completion", the windows the losses are split by.
	GapMs float64 `json:"gapMs"`
	GapAt string  `json:"gapAt"`
	// ResumeGapMs is the longest wait of a datagram sent after the resume:
	// the network's gap beside the guest's own warm-up.
	ResumeGapMs float64 `json:"resumeGapMs"`
	// ReadyBeforeResume says the target's port was reported ready before the
	// VM resumed, and still was after it; ReadyAheadMs by how much (the lab
	// saw the condition True that long before the resume).
	ReadyBeforeResume bool    `json:"readyBeforeResume"`
	ReadyAheadMs      float64 `json:"readyAheadMs"`
	// PrepareMs is how long plugging the target took until it was ready (per-port, and
	// QEMU's target in both modes) or waiting for its device (the namespace VM, direct).
	PrepareMs float64 `json:"prepareMs"`
	// StopToResumeMs is from the VM's stop on the source to its resume on
	// the target; DowntimeMs and TotalMs are the hypervisor's own figures.
	StopToResumeMs float64 `json:"stopToResumeMs"`
	DowntimeMs     float64 `json:"downtimeMs"`
	TotalMs        float64 `json:"totalMs"`
	// HandOverMs is the time from the source pod's deletion to the port bound
	// on the target alone in the southbound database.
	HandOverMs float64 `json:"handOverMs"`
}

// GuestCrash is a migration whose guest died after its resume, with its
// kernel's last words.
type GuestCrash struct {
	Round int    `json:"round"`
	From  string `json:"from"`
	To    string `json:"to"`
	Why   string `json:"why"`
}

// MigrateReport is what `lab migrate` prints.
type MigrateReport struct {
	VM         string           `json:"vm"`
	PerPort    MigrationFigures `json:"perPort"`
	Direct     MigrationFigures `json:"direct"`
	PauseMs    float64          `json:"pauseMs,omitempty"`
	IntervalMs float64          `json:"intervalMs"`
	// DowntimeLimitMs is QEMU's limit for its migrations' downtime.
	DowntimeLimitMs float64 `json:"downtimeLimitMs,omitempty"`
	// GuestWarmup is, with QEMU, the same guest migrated between two QEMUs
	// on one Linux bridge with no OVS and no netshift, before the run: the
	// gap its traffic sees there is the guest's own (TCG warming up after
	// the resume), the floor under every migration's ResumeGapMs.
	GuestWarmup *WarmupFigures `json:"guestWarmup,omitempty"`
	// DatapathNice is the nodes' ovs-vswitchd niceness during the run (0: the lab's own).
	DatapathNice int `json:"datapathNice"`
}

// WarmupFigures are the guest's migrations with no network of the lab's.
type WarmupFigures struct {
	Migrations   int     `json:"migrations"`
	ResumeGapMs  float64 `json:"resumeGapMs"` // the longest, after a resume
	LostResumed  int     `json:"lostResumed"` // datagrams sent after a resume, never answered
	DowntimeMs   float64 `json:"downtimeMs"`  // QEMU's, the longest
	BootSeconds  float64 `json:"bootSeconds"` // QEMU's start to the guest's first answer
	StopResumeMs float64 `json:"stopResumeMs"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// medianAndMax are the median and the largest of xs (0, 0 for none).
func medianAndMax(xs []float64) (p50, largest float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
