package vm

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/testenv"
)

func TestExchangeFiguresCountLossesAndTheLongestWait(t *testing.T) {
	ms := time.Millisecond
	// Every 2 ms a datagram; 3 and 4 lost; 5 answered late (at 20 ms).
	sent := []time.Duration{0, 2 * ms, 4 * ms, 6 * ms, 8 * ms, 10 * ms, 12 * ms}
	echoed := []time.Duration{1 * ms, 3 * ms, 5 * ms, 0, 0, 20 * ms, 13 * ms}
	lost, gap := ExchangeFigures(sent, echoed, 0, len(sent))
	if lost != 2 {
		t.Errorf("lost %d, want 2", lost)
	}
	// Datagram 3 (sent at 6 ms) waited until the echo of 6 at 13 ms: 7 ms...
	// ...but 5's echo at 20 ms is later than 6's at 13 ms, so 5 waited only 3 ms.
	if gap != 7*ms {
		t.Errorf("gap %s, want 7ms (datagram 3 to the echo of 6)", gap)
	}
	// A window of its own: only datagrams 3 and 4; later echoes still count.
	lost, gap = ExchangeFigures(sent, echoed, 3, 5)
	if lost != 2 || gap != 7*ms {
		t.Errorf("window [3,5): lost %d gap %s", lost, gap)
	}
	// The tail unanswered: no gap can be measured past the last echo, but the loss counts.
	lost, _ = ExchangeFigures([]time.Duration{0, 2 * ms}, []time.Duration{1 * ms, 0}, 0, 2)
	if lost != 1 {
		t.Errorf("tail: lost %d", lost)
	}
}

// TestVMTrafficCountsEveryDatagramAndHoldsThePause runs the VM's traffic
// loop between two real namespaces joined by a veth: every datagram is
// answered, none is sent while the VM is paused, and every echo comes after
// its datagram.
func TestVMTrafficCountsEveryDatagramAndHoldsThePause(t *testing.T) {
	testenv.RequireRoot(t)
	vm, peer := fmt.Sprintf("vmtraffic-%d-vm", os.Getpid()), fmt.Sprintf("vmtraffic-%d-peer", os.Getpid())
	for _, args := range [][]string{
		{"netns", "add", vm}, {"netns", "add", peer},
		{"-n", vm, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", peer},
		{"-n", vm, "addr", "add", "192.0.2.1/24", "dev", "eth0"}, {"-n", peer, "addr", "add", "192.0.2.2/24", "dev", "eth0"},
		{"-n", vm, "link", "set", "eth0", "up"}, {"-n", peer, "link", "set", "eth0", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", vm).Run()
		_ = exec.Command("ip", "netns", "del", peer).Run()
	})
	echo, err := OpenEcho(peer)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(echo)
	v, err := StartTraffic(vm, "192.0.2.2", echo, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.WaitEchoes(0, 20, 5*time.Second); err != nil {
		v.Close(0)
		t.Fatal(err)
	}
	// Counted from here, as lab migrate does: the first datagrams wait for ARP.
	first := v.Next()
	time.Sleep(100 * time.Millisecond)
	v.Pause(100 * time.Millisecond)
	paused := v.Next()
	time.Sleep(50 * time.Millisecond)
	if n := v.Next(); n != paused {
		t.Errorf("%d datagrams sent while the VM was paused", n-paused)
	}
	v.Resume()
	if err := v.WaitEchoes(paused, 20, 5*time.Second); err != nil {
		t.Error(err)
	}
	sent, echoed := v.Close(200 * time.Millisecond)
	lost, gap := ExchangeFigures(sent, echoed, first, len(sent))
	if lost != 0 {
		t.Errorf("%d of %d datagrams lost between two namespaces", lost, len(sent)-first)
	}
	for i := range sent {
		if echoed[i] != 0 && echoed[i] < sent[i] {
			t.Fatalf("datagram %d echoed at %s, before it was sent at %s", i, echoed[i], sent[i])
		}
	}
	// The pause is the VM's own: no datagram waited through it.
	t.Logf("%d datagrams, longest gap %s, real-time thread: %v", len(sent), gap, v.Realtime())
}
