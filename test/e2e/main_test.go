// Package e2e runs netshift end to end in the lab: real nodes (their own
// network namespace, Open vSwitch, containerd, kubelet and kube-proxy), OVN,
// a real control plane, netshift installed from config/lab as pods, and real
// traffic between real pods. Each test builds its own lab with its own name.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/testenv"
)

var (
	binary  string
	missing error
)

func TestMain(m *testing.M) {
	// The tests read the nodes' switches through netshift's OVSDB package, which logs through
	// controller-runtime: its logs are the lab's daemons' business, not the tests'.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "netshift-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "netshift-lab") // the lab build: the lab, and every product command
	if out, err := exec.Command("../../hack/build.sh", dir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build netshift: %v\n%s", err, out)
		os.Exit(1)
	}
	// Labs of these tests live in their own root, never next to a user's labs.
	root, _ := os.MkdirTemp("", "netshift-e2e-labs-")
	os.Setenv("NETSHIFT_LAB_ROOT", root)
	labRoot = root
	if err := lab.Requirements(true); err != nil {
		missing = &testenv.Missing{Reason: err.Error()}
	} else if _, err := controlplane.AssetsDir(); err != nil {
		missing = err
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.RemoveAll(root)
	os.Exit(code)
}

// netshift runs the binary and returns its combined output.
func netshift(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return runNetshift(args...)
}

func runNetshift(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	return string(out), err
}

func labStatus(name string) (lab.Status, error) {
	var st lab.Status
	out, err := runNetshift("lab", "status", "--name", name, "-o", "json")
	if err != nil {
		return st, fmt.Errorf("%w: %s", err, out)
	}
	return st, json.Unmarshal([]byte(out), &st)
}

// statusReported: `netshift status` exits 3 when what it printed needs a
// person (a lab's earlier step may have left a node failed or held); its
// output is still the report the caller reads.
func statusReported(args []string, err error) bool {
	var exit *exec.ExitError
	return slices.Contains(args, "status") && errors.As(err, &exit) && exit.ExitCode() == 3
}

func mustNetshift(t testing.TB, args ...string) string {
	t.Helper()
	out, err := netshift(t, args...)
	if err != nil && !statusReported(args, err) {
		// A line each: the test tier's filter keeps only lines that carry the file:line prefix.
		for _, l := range strings.Split(lastLines(out, 25), "\n") {
			t.Logf("  %s", l)
		}
		t.Fatalf("netshift %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// up brings a lab up and takes it down when the test ends.
func up(t *testing.T, name string, args ...string) lab.Status {
	t.Helper()
	testenv.Require(t, missing)
	start := time.Now()
	mustNetshift(t, append([]string{"lab", "up", "--name", name}, args...)...)
	t.Logf("lab up --name %s %s: %.1f s", name, strings.Join(args, " "), time.Since(start).Seconds())
	if s, err := lab.LoadState(name); err == nil {
		// lab up healed a pod that stayed unreachable: what OVN held of it, for a person to read.
		if data, err := os.ReadFile(s.Path("connectivity.log")); err == nil {
			t.Log("lab up healed an unreachable pod; its connectivity.log:")
			for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				t.Log("  " + line)
			}
		}
	}
	t.Cleanup(func() {
		if s, err := lab.LoadState(name); err == nil {
			if dest := os.Getenv("NETSHIFT_E2E_ARTIFACTS"); dest != "" && t.Failed() {
				keepLabFiles(t, s.Dir(), filepath.Join(dest, t.Name()))
			}
			if out, err := netshift(t, "lab", "down", "--name", name); err != nil {
				t.Errorf("lab down: %v\n%s", err, out)
			}
		}
	})
	return status(t, name)
}

// benchLab brings a lab up for a benchmark and, when the benchmark ends,
// takes it down and checks that it left nothing behind on the machine (no
// namespace, link or daemon): what the smoke of every benchmark asserts
// beside its own invariants.
func benchLab(b *testing.B, name string, args ...string) {
	b.Helper()
	testenv.Require(b, missing)
	before := takeFootprint(b)
	if out, err := runNetshift(append([]string{"lab", "up", "--name", name}, args...)...); err != nil {
		_, _ = runNetshift("lab", "down", "--name", name)
		b.Fatalf("lab up --name %s: %v\n%s", name, err, lastLines(out, 25))
	}
	b.Cleanup(func() {
		if out, err := runNetshift("lab", "down", "--name", name); err != nil {
			b.Errorf("lab down --name %s: %v\n%s", name, err, lastLines(out, 25))
			return
		}
		waitGone(b, before)
	})
}

// smallest picks a benchmark's size: the full one, or with -short (the
// CI's bench smoke) the smallest that still exercises every path.
func smallest[T any](full, smoke T) T {
	if testing.Short() {
		return smoke
	}
	return full
}

// lastLines is the end of a command's output.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// keepLabFiles copies a failed test's lab files (logs, state, databases;
// not sockets) to dest before the lab goes, for a person to read.
func keepLabFiles(t *testing.T, dir, dest string) {
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dest, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dest, rel), data, 0o644)
	})
	if err != nil {
		t.Logf("keeping the lab's files in %s: %v", dest, err)
		return
	}
	t.Logf("the lab's files are kept in %s", dest)
}

func status(t testing.TB, name string) lab.Status {
	t.Helper()
	st, err := labStatus(name)
	if err != nil {
		t.Fatalf("lab status -o json: %v", err)
	}
	return st
}

// labRoot is the directory every e2e lab lives under.
var labRoot string

// footprint is what a lab could leave behind on the machine: its network
// namespaces and root links (a lab names them all "ns-<lab>-..."), and the
// processes that work in a lab's directory, by their command line or by the
// mounts they see (a node's containerd shims and pods see its directory).
// Only what is a lab's is counted, so that the integration tier's own
// nodes and control planes, run beside the e2e tier, are never taken for
// a lab's leftovers.
type footprint struct {
	netns, rootLinks, daemons map[string]bool
}

func takeFootprint(t testing.TB) footprint {
	t.Helper()
	f := footprint{netns: map[string]bool{}, rootLinks: map[string]bool{}, daemons: map[string]bool{}}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if fs := strings.Fields(l); len(fs) > 0 && strings.HasPrefix(fs[0], lab.NamePrefix) {
			f.netns[fs[0]] = true
		}
	}
	out, _ = exec.Command("ip", "-o", "link").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if fs := strings.Fields(l); len(fs) > 1 {
			if name := strings.TrimSuffix(strings.SplitN(fs[1], "@", 2)[0], ":"); strings.HasPrefix(name, lab.NamePrefix) {
				f.rootLinks[name] = true
			}
		}
	}
	if labRoot == "" {
		return f
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		comm := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		if state := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]; state == "Z" {
			continue
		}
		if worksInLabDir(e.Name()) {
			f.daemons[e.Name()+" "+comm] = true
		}
	}
	return f
}

// worksInLabDir tells whether process pid names a lab's directory on its
// command line or sees one among its mounts. The labs' root is a directory
// of a random name: a mount shows it by its path on its own file system,
// which is not the full path where /tmp is a file system of its own.
func worksInLabDir(pid string) bool {
	for _, file := range []string{"cmdline", "mountinfo"} {
		if data, err := os.ReadFile(filepath.Join("/proc", pid, file)); err == nil && strings.Contains(string(data), filepath.Base(labRoot)) {
			return true
		}
	}
	return false
}

// leftovers lists what after has that before had not.
func leftovers(before, after footprint) []string {
	var out []string
	for what, pair := range map[string][2]map[string]bool{"namespace": {before.netns, after.netns},
		"link": {before.rootLinks, after.rootLinks}, "process": {before.daemons, after.daemons}} {
		for k := range pair[1] {
			if !pair[0][k] {
				out = append(out, what+" "+k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func waitGone(t testing.TB, before footprint) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := leftovers(before, takeFootprint(t))
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type nodeList struct{ corev1.NodeList }
