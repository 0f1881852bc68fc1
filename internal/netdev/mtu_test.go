package netdev

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"netshift.io/netshift/internal/testenv"
)

// pods makes n real network namespaces, each with a veth whose other end is
// in the test's "node" namespace, as the lab's pods are.
func pods(t testing.TB, n int) (node string, names []string) {
	t.Helper()
	testenv.RequireRoot(t)
	node = fmt.Sprintf("nstest-node-%d", os.Getpid())
	run(t, "ip", "netns", "add", node)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", node).Run() })
	for i := range n {
		ns := fmt.Sprintf("nstest-%d-p%d", os.Getpid(), i)
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		run(t, "ip", "-n", node, "link", "add", fmt.Sprintf("vp%d", i), "mtu", "1450", "type", "veth", "peer", "name", "eth0", "netns", ns)
		names = append(names, ns)
	}
	return node, names
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func TestSetMTUInsidePodNamespaces(t *testing.T) {
	node, ns := pods(t, 3)
	for _, n := range ns {
		h, err := Open(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.SetMTU("eth0", 1350); err != nil {
			t.Fatal(err)
		}
		if got, _ := h.MTU("eth0"); got != 1350 {
			t.Errorf("%s eth0 MTU %d, want 1350", n, got)
		}
		h.Close()
	}
	h, err := Open(node)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got, _ := h.MTU("vp0"); got != 1450 {
		t.Errorf("the node end changed too: %d", got)
	}
	if err := h.SetMTU("nope", 1400); err == nil || err.Error() != "nope in "+node+": Link not found" {
		t.Errorf("missing link: %v", err)
	}
	if _, err := Open("no-such-namespace"); err == nil {
		t.Error("opened a namespace that does not exist")
	}
}

// BenchmarkSetMTU100Pods is one agent applying a new MTU to 100 real pod
// namespaces (target: under 1 s in total).
func BenchmarkSetMTU100Pods(b *testing.B) {
	_, ns := pods(b, 100)
	mtu := 1400
	for b.Loop() {
		if mtu == 1400 { // alternate, so each round is a real change
			mtu = 1350
		} else {
			mtu = 1400
		}
		for _, n := range ns {
			h, err := Open(n)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.SetMTU("eth0", mtu); err != nil {
				b.Fatal(err)
			}
			h.Close()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/100-pods")
}

func TestNamespaceNamesCannotLeaveRunNetns(t *testing.T) {
	for _, name := range []string{"../proc/1/ns/net", "a/b", "..", "."} {
		if h, err := Open(name); err == nil {
			h.Close()
			t.Errorf("Open(%q) opened a namespace", name)
		} else if !strings.Contains(err.Error(), "not a network namespace name") {
			t.Errorf("Open(%q): %v", name, err)
		}
		if err := InNetns(name, func() error { return nil }); err == nil {
			t.Errorf("InNetns(%q) entered a namespace", name)
		}
	}
}

func TestOpenByPath(t *testing.T) {
	_, ns := pods(t, 1)
	byName, err := Open(ns[0])
	if err != nil {
		t.Fatal(err)
	}
	defer byName.Close()
	if err := byName.SetMTU("eth0", 1234); err != nil {
		t.Fatal(err)
	}
	h, err := Open("/run/netns/" + ns[0])
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got, err := h.MTU("eth0"); err != nil || got != 1234 {
		t.Fatalf("eth0 in the namespace opened by path: MTU %d, %v; want 1234", got, err)
	}
}

func TestInNetnsOfTheCallersOwnNamespace(t *testing.T) {
	ran := false
	if err := InNetns("", func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("InNetns(\"\"): %v, ran %v", err, ran)
	}
}

func TestMTUsListsEveryLink(t *testing.T) {
	node, _ := pods(t, 2)
	h, err := Open(node)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := h.MTUs()
	if err != nil || got["vp0"] != 1450 || got["vp1"] != 1450 || got["lo"] != 65536 {
		t.Fatalf("MTUs = %v, %v", got, err)
	}
}
