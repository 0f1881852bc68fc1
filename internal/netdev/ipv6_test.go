package netdev

import (
	"strings"
	"testing"
)

// TestIPv6AddressesComeBackAboveIPv6sLeastMTU: a pod's eth0 with an IPv6
// address taken to 1200 loses it (the kernel turns IPv6 off below 1280); set
// back to 1450 through SetMTU, the address is there again, not only the
// link-local one the kernel makes itself.
func TestIPv6AddressesComeBackAboveIPv6sLeastMTU(t *testing.T) {
	_, ns := pods(t, 1)
	run(t, "ip", "-n", ns[0], "link", "set", "eth0", "up")
	run(t, "ip", "-n", ns[0], "addr", "add", "fd00:99::1/64", "dev", "eth0", "nodad")
	h, err := Open(ns[0])
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if held, err := HasIPv6(ns[0], []string{"eth0"}); err != nil || !strings.Contains(held, "fd00:99::1/64") {
		t.Fatalf("HasIPv6 = %q, %v: want eth0's fd00:99::1/64", held, err)
	}
	if err := h.SetMTU("eth0", 1200); err != nil {
		t.Fatal(err)
	}
	if addrs, err := h.IPv6Addresses("eth0"); err != nil || len(addrs) != 0 {
		t.Fatalf("at MTU 1200: IPv6 addresses %v (%v): the kernel removes them", addrs, err)
	}
	if err := h.SetMTU("eth0", 1450); err != nil {
		t.Fatal(err)
	}
	addrs, err := h.IPv6Addresses("eth0")
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "fd00:99::1/64" {
		t.Fatalf("back at 1450: IPv6 addresses %v (%v), want fd00:99::1/64 put back", addrs, err)
	}
	run(t, "ip", "-n", ns[0], "link", "set", "lo", "up")
	if held, err := HasIPv6(ns[0], []string{"lo"}); err != nil || held != "" {
		t.Fatalf("lo holds %q (%v): ::1 is the namespace's own, not a network's: want none", held, err)
	}
}
