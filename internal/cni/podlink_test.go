package cni

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// TestNodeEndStaysUpWhenTheSwitchHoldsItFirst: the agent may plug a pooled
// pod's port before netshift-cni has made its node end, so the switch opens
// the device the moment it appears. Each of these node ends, made that way
// against a real ovs-vswitchd, is attached and up: once the switch's own
// change of the device's flags put an end made down and brought up after
// back down, and the pod was cut off for good.
func TestNodeEndStaysUpWhenTheSwitchHoldsItFirst(t *testing.T) {
	sw := ovstest.Start(t)
	ctx := context.Background()
	for i := range 10 {
		id := fmt.Sprintf("5e1f0000-0000-4000-8000-%012d", i)
		port := plug.Port{ID: id, MAC: fmt.Sprintf("0a:58:0a:f4:00:%02x", i+1)}.WithDefaults("uid")
		if err := sw.DB.Plug(ctx, plug.Direct, port, "pods/p", false, "br-int", "netdev"); err != nil {
			t.Fatal(err)
		}
		pod := fmt.Sprintf("nscnipod-%d", i)
		if out, err := exec.Command("ip", "netns", "add", pod).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", pod, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", pod).Run() })
		mac, _ := net.ParseMAC(port.MAC)
		iface := portpool.Interface{MAC: mac, Addresses: []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.244.0.%d/16", i+10))}}
		link := podLink{Netns: "/run/netns/" + pod, IfName: "eth0", HostName: port.Tap, MTU: 1400}
		if err := netdev.InNetns(sw.Netns, func() error { return link.create(iface) }); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			if p := sw.Vsctl("get", "interface", port.Tap, "ofport"); p != "-1" && p != "[]" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never attached", port.Tap)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // the switch's own flag change follows its attach
		err := netdev.InNetns(sw.Netns, func() error {
			l, err := netlink.LinkByName(port.Tap)
			if err != nil {
				return err
			}
			if l.Attrs().Flags&net.FlagUp == 0 {
				return fmt.Errorf("node end %s is down after the switch attached it", port.Tap)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
}
