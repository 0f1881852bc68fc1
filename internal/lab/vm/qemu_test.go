package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netshift.io/netshift/internal/lab/vm/guest"
	"netshift.io/netshift/internal/testenv"
)

// realGuest builds the guest image from the machine's kernel package and
// busybox and the echo program built now, or skips (fails under CI) naming
// what is missing.
func realGuest(t *testing.T) guest.Image {
	t.Helper()
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "no qemu-system-x86_64 (Debian's qemu-system-x86: hack/setup.sh installs it)"})
	}
	if _, err := os.Stat(filepath.Join(guest.KernelDir(), "boot")); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "no guest kernel in " + guest.KernelDir() + " (hack/setup.sh unpacks Debian's there)"})
	}
	dir := t.TempDir()
	echo := filepath.Join(dir, "netshift-guest-echo")
	build := exec.Command("go", "build", "-o", echo, "./guest/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the guest's program: %v\n%s", err, out)
	}
	img, err := guest.Build(guest.Sources{KernelDir: guest.KernelDir(), Busybox: "/bin/busybox", Echo: echo}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestAQEMUGuestMigratesAndAnswersAfterItsResume boots the real guest under
// QEMU and migrates it there and back between two QEMUs of one host (both
// taps on one Linux bridge with the peer, as lab migrate measures the
// guest's warm-up) while the peer sends to it: the guest answers after each
// resume, QEMU's STOP comes before its RESUME, and nothing the peer sent
// after a resume is lost.
func TestAQEMUGuestMigratesAndAnswersAfterItsResume(t *testing.T) {
	img := realGuest(t)
	host, peer := fmt.Sprintf("qemutest-%d-host", os.Getpid()), fmt.Sprintf("qemutest-%d-peer", os.Getpid())
	for _, ns := range []string{host, peer} {
		ip(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	run := func(ctx context.Context, name string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	q := QEMU{Image: img, MigrationPort: 4444, Interval: GuestInterval, Run: run}
	w, err := MeasureWarmup(context.Background(), q, 2, host, peer, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("booted in %.1f s; 2 migrations: QEMU's downtime up to %.0f ms, STOP to RESUME up to %s, longest gap after a resume %s, %d lost after a resume",
		w.Boot.Seconds(), w.DowntimeMs, w.StopToResume, w.ResumeGap, w.LostResumed)
	if w.Migrations != 2 {
		t.Errorf("%d migrations, want 2", w.Migrations)
	}
	if w.StopToResume <= 0 {
		t.Errorf("STOP to RESUME %s: QEMU's events out of order", w.StopToResume)
	}
	// The bridge learns the guest's new tap from QEMU's first announcement, sent as the guest
	// resumes: what went to the old tap before it are a few ms of datagrams, not more.
	if limit := 50; w.LostResumed > limit {
		t.Errorf("%d datagrams sent after a resume lost, more than %d (100 ms of them)", w.LostResumed, limit)
	}
	if out, _ := exec.Command("ip", "-n", host, "-o", "link", "show").CombinedOutput(); strings.Contains(string(out), "tapw") || strings.Contains(string(out), "br0") {
		t.Errorf("left behind in the host namespace:\n%s", out)
	}
}
