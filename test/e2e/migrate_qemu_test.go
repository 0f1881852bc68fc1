package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netshift.io/netshift/internal/heldframes"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/vm/guest"
	"netshift.io/netshift/internal/testenv"
)

// requireQEMU skips (or, in CI, fails) where the guest cannot run.
func requireQEMU(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testenv.Require(tb, &testenv.Missing{Reason: "no qemu-system-x86_64 (hack/setup.sh installs Debian's)"})
	}
	if _, err := os.Stat(filepath.Join(guest.KernelDir(), "boot")); err != nil {
		testenv.Require(tb, &testenv.Missing{Reason: "no guest kernel in " + guest.KernelDir() + " (hack/setup.sh unpacks Debian's there)"})
	}
}

// qemuFaults are what must never happen in a QEMU migration: a guest that
// crashed, a target reported ready after QEMU's RESUME, and, per-port, a
// datagram sent after the RESUME lost at the resume or the completion, or
// more lost while the guest was stopped than QEMU's downtime lets reach its
// old host (the downtime times the rate, plus one).
func qemuFaults(rep lab.MigrateReport) []string {
	var faults []string
	for _, mode := range []struct {
		name string
		f    lab.MigrationFigures
	}{{"per-port", rep.PerPort}, {"direct", rep.Direct}} {
		for _, c := range mode.f.GuestCrashes {
			faults = append(faults, fmt.Sprintf("%s round %d %s -> %s: the guest crashed: %s", mode.name, c.Round, c.From, c.To, c.Why))
		}
		for _, m := range mode.f.Each {
			at := mode.name + " " + m.From + " -> " + m.To + ": "
			if !m.ReadyBeforeResume {
				faults = append(faults, fmt.Sprintf("%sthe target's port was reported ready %.0f ms after QEMU's RESUME", at, -m.ReadyAheadMs))
			}
			if m.StopToResumeMs <= 0 || m.TotalMs <= 0 || m.DowntimeMs <= 0 {
				faults = append(faults, fmt.Sprintf("%sQEMU's figures missing: stop to resume %.1f ms, downtime %.0f ms, total %.0f ms",
					at, m.StopToResumeMs, m.DowntimeMs, m.TotalMs))
			}
			if mode.name != "per-port" {
				continue
			}
			if m.LostAtResume != 0 || m.LostAtCompletion != 0 {
				faults = append(faults, fmt.Sprintf("%s%d datagrams sent after QEMU's RESUME lost at the resume (sent %v ms after it) and %d at the completion, want none",
					at, m.LostAtResume, m.LostAtResumeSentMs, m.LostAtCompletion))
			}
			if m.LostWhileStopped > m.StoppedBound {
				faults = append(faults, fmt.Sprintf("%s%d datagrams lost while the guest was stopped, more than QEMU's downtime (%.0f ms) lets reach its old host (%d)",
					at, m.LostWhileStopped, m.DowntimeMs, m.StoppedBound))
			}
			if most := answeredTwiceBound(m.StopToResumeMs, rep.IntervalMs); m.EchoedTwice > most {
				faults = append(faults, fmt.Sprintf("%s%d datagrams answered twice (sent %v ms after the RESUME), more than the agent's window (%s) reaches back before a stop of %.1f ms (%d)",
					at, m.EchoedTwice, m.EchoedTwiceSentMs, heldframes.Window, m.StopToResumeMs, most))
			}
		}
	}
	return faults
}

// answeredTwiceBound is how many datagrams a per-port migration may have
// answered twice: the agent gives the resumed guest what reached the held
// bridge in heldframes.Window before the guest's first frame, which comes
// after the RESUME, so what the source guest had too was sent in the window's
// part before the stop, plus one for the sender's jitter and one on its way.
func answeredTwiceBound(stopToResumeMs, intervalMs float64) int {
	before := max(0, float64(heldframes.Window.Milliseconds())-stopToResumeMs)
	return int(before/intervalMs) + 2
}

// A real guest under QEMU moves between node-1 and node-2 and back, per-port
// and direct: QEMU migrates it over the underlay, netshift reports every
// target ready before QEMU's RESUME, and per-port loses no datagram sent
// after the resume (and answers few twice); what reached the old host while
// the guest was stopped is counted apart, within QEMU's downtime; nothing is
// left behind, no QEMU either.
func TestQEMUGuestMigration(t *testing.T) {
	requireQEMU(t)
	up(t, "migq", "--ovn", "--pods-per-node", "1")
	rep, progress := migrate(t, "migq", 1, "--vm", "qemu")
	t.Logf("lab migrate --vm qemu:\n%s", progress)
	if rep.GuestWarmup == nil || rep.GuestWarmup.Migrations != 2 {
		t.Errorf("the guest's own warm-up was not measured: %+v", rep.GuestWarmup)
	}
	if rep.PerPort.Migrations != 2 || rep.Direct.Migrations != 2 {
		t.Errorf("%d per-port and %d direct migrations, want 2 of each", rep.PerPort.Migrations, rep.Direct.Migrations)
	}
	for _, f := range qemuFaults(rep) {
		t.Error(f)
	}
	nothingLeftOfTheVMs(t, "migq")
	// The lab's QEMUs keep their consoles in its directory (other tests may run QEMUs of their own).
	out, _ := exec.Command("pgrep", "-af", "qemu-system").CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, filepath.Join(labRoot, "migq")) {
			t.Errorf("QEMU left running: %s", line)
		}
	}
}

// BenchmarkQEMUMigration is `netshift lab migrate --vm qemu --count 10` in a
// 3-node OVN lab, per-port and direct side by side: what a real guest loses,
// QEMU's own downtime beside the stop the traffic sees, and how long the
// guest itself takes to answer again. Any fault of qemuFaults fails it.
// With -short, 1 round (2 migrations per mode).
func BenchmarkQEMUMigration(b *testing.B) {
	requireQEMU(b)
	benchLab(b, "migqb", "--ovn", "--pods-per-node", "1")
	for b.Loop() {
		rep, progress := migrate(b, "migqb", smallest(10, 1), "--vm", "qemu")
		data, _ := json.Marshal(map[string]any{"perPort": summary(rep.PerPort), "direct": summary(rep.Direct), "guestWarmup": rep.GuestWarmup})
		b.Logf("migrations: %s", data)
		for _, line := range strings.Split(strings.TrimSpace(progress), "\n") {
			if strings.Contains(line, ", 0 at resume, 0 at completion") {
				continue // the log of a benchmark is cut short: only the migrations that lost after a resume
			}
			b.Log(line)
		}
		b.ReportMetric(float64(rep.PerPort.LostAtResume+rep.PerPort.LostAtCompletion), "perport-lost-after-resume")
		b.ReportMetric(float64(rep.Direct.LostAtResume+rep.Direct.LostAtCompletion), "direct-lost-after-resume")
		b.ReportMetric(float64(rep.PerPort.LostBeforeResume), "perport-lost-before-stop")
		b.ReportMetric(float64(rep.PerPort.LostWhileStopped), "perport-lost-while-stopped")
		b.ReportMetric(float64(rep.Direct.LostWhileStopped), "direct-lost-while-stopped")
		b.ReportMetric(float64(rep.PerPort.EchoedTwice), "perport-answered-twice")
		b.ReportMetric(float64(rep.PerPort.OverStoppedBound), "perport-over-stopped-bound")
		b.ReportMetric(float64(rep.PerPort.NotReadyBeforeResume), "perport-ready-late")
		b.ReportMetric(rep.PerPort.DowntimeMsP50, "perport-downtime-p50-ms")
		b.ReportMetric(rep.PerPort.StopToResumeMsP50, "perport-stop-resume-p50-ms")
		b.ReportMetric(rep.PerPort.ResumeGapMsP50, "perport-resume-gap-p50-ms")
		if rep.GuestWarmup != nil {
			b.ReportMetric(rep.GuestWarmup.ResumeGapMs, "guest-warmup-gap-ms")
		}
		if faults := qemuFaults(rep); len(faults) > 0 {
			b.Fatalf("QEMU migrations:\n%s", strings.Join(faults, "\n"))
		}
	}
}

// summary is a mode's figures without each migration's.
func summary(f lab.MigrationFigures) lab.MigrationFigures {
	f.Each = nil
	return f
}
