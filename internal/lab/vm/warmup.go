package vm

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Warmup is what a guest's migrations show with no network but a Linux
// bridge: the gap its traffic sees after a resume is the guest's own (under
// TCG, the target translating the guest's code again), the floor under any
// network's.
type Warmup struct {
	Migrations int
	// Boot is from QEMU's start to the guest's first answers.
	Boot time.Duration
	// ResumeGap is the longest wait of a datagram sent after a resume, and
	// LostResumed how many of those were never answered.
	ResumeGap   time.Duration
	LostResumed int
	// DowntimeMs is QEMU's longest downtime, StopToResume the longest from STOP to RESUME.
	DowntimeMs   float64
	StopToResume time.Duration
}

// Bridge addresses of the warm-up: TEST-NET-1, never routed.
const (
	warmupGuestIP = "192.0.2.10/24"
	warmupPeerIP  = "192.0.2.20/24"
	warmupMAC     = "0a:58:c0:00:02:0a"
)

// MeasureWarmup migrates q's guest count times between two QEMUs in hostNS,
// both taps on one Linux bridge with a veth to peerNS, which sends the
// traffic. The bridge learns the guest's new tap from QEMU's announcement:
// the few datagrams sent between the resume and that announcement go to the
// old tap (LostResumed). Both namespaces exist; what it makes in them it removes (and
// what a run before it left, first).
func MeasureWarmup(ctx context.Context, q QEMU, count int, hostNS, peerNS, dir string) (Warmup, error) {
	var w Warmup
	clean := func() {
		_, _ = q.Run(context.Background(), "ip", "-n", hostNS, "link", "del", "br0")
		_, _ = q.Run(context.Background(), "ip", "-n", hostNS, "link", "del", "topeer")
	}
	clean()
	defer clean()
	for _, args := range [][]string{
		{"-n", hostNS, "link", "add", "br0", "type", "bridge"},
		{"-n", hostNS, "link", "set", "br0", "up"},
		{"-n", hostNS, "link", "set", "lo", "up"},
		{"-n", hostNS, "link", "add", "topeer", "type", "veth", "peer", "name", "eth0", "netns", peerNS},
		{"-n", hostNS, "link", "set", "topeer", "master", "br0", "up"},
		{"-n", peerNS, "addr", "replace", warmupPeerIP, "dev", "eth0"},
		{"-n", peerNS, "link", "set", "eth0", "up"},
	} {
		if _, err := q.Run(ctx, "ip", args...); err != nil {
			return w, fmt.Errorf("warm-up bridge: %w", err)
		}
	}
	q.PeerNetns = peerNS
	host := Host{Name: "warm-up", Netns: hostNS, Address: "127.0.0.1", Dir: dir}
	// One host: each QEMU its own tap name.
	specs := []Spec{{Name: "warmup-a", MAC: warmupMAC, IP: warmupGuestIP, Tap: "tapwa", MTU: 1500},
		{Name: "warmup-b", MAC: warmupMAC, IP: warmupGuestIP, Tap: "tapwb", MTU: 1500}}
	var doms []Domain
	defer func() {
		for _, d := range doms {
			_ = q.Destroy(context.Background(), d)
		}
	}()
	define := func(i int) (Domain, error) {
		d, err := q.Define(ctx, host, specs[i%2])
		if err != nil {
			return nil, err
		}
		doms = append(doms, d)
		if _, err := q.Run(ctx, "ip", "-n", hostNS, "link", "set", specs[i%2].Tap, "master", "br0"); err != nil {
			return nil, err
		}
		return d, nil
	}
	src, err := define(0)
	if err != nil {
		return w, err
	}
	started := time.Now()
	if err := q.Start(ctx, src); err != nil {
		return w, err
	}
	t, err := q.Traffic(ctx, src)
	if err != nil {
		return w, err
	}
	if err := t.WaitEchoes(0, 20, 90*time.Second); err != nil {
		t.Close(0)
		return w, fmt.Errorf("the guest never answered (%v); its console: %s", err, lastLines(filepath.Join(dir, specs[0].Name, "console.log")))
	}
	w.Boot = time.Since(started)
	var stopped, resumed []int // each migration's first datagram sent stopped, and resumed
	for i := 1; i <= count; i++ {
		m, dst, err := q.migrateTo(ctx, src, define, i)
		if err != nil {
			t.Close(0)
			return w, err
		}
		at := t.SeqAt(m.Resume)
		stopped, resumed = append(stopped, t.SeqAt(m.Stop)), append(resumed, at)
		w.Migrations++
		w.DowntimeMs = max(w.DowntimeMs, m.DowntimeMs)
		w.StopToResume = max(w.StopToResume, m.Resume.Sub(m.Stop))
		if err := t.WaitEchoes(at, 50, 20*time.Second); err != nil {
			t.Close(0)
			if why := q.Crashed(dst); why != "" {
				return w, fmt.Errorf("after migration %d the guest crashed (QEMU under TCG): %s", i, why)
			}
			return w, fmt.Errorf("after migration %d: %v; the target's console: %s", i, err,
				lastLines(filepath.Join(dir, dst.Spec().Name, "console.log")))
		}
		src = dst
	}
	time.Sleep(100 * time.Millisecond)
	last := t.Next()
	sent, echoed := t.Close(300 * time.Millisecond)
	// After each resume, until the next migration's stop.
	for k, from := range resumed {
		to := last
		if k+1 < len(stopped) {
			to = stopped[k+1]
		}
		lost, gap := ExchangeFigures(sent, echoed, from, to)
		w.LostResumed += lost
		w.ResumeGap = max(w.ResumeGap, gap)
	}
	return w, nil
}

// migrateTo starts the i-th target incoming, migrates src to it and ends src.
func (q *QEMU) migrateTo(ctx context.Context, src Domain, define func(int) (Domain, error), i int) (Migration, Domain, error) {
	dst, err := define(i)
	if err != nil {
		return Migration{}, nil, err
	}
	if err := q.StartIncoming(ctx, dst); err != nil {
		return Migration{}, nil, err
	}
	m, err := q.Migrate(ctx, src, dst)
	if err != nil {
		return m, nil, err
	}
	if err := q.Destroy(ctx, src); err != nil && !strings.Contains(err.Error(), "Cannot find") {
		return m, nil, err
	}
	return m, dst, nil
}
