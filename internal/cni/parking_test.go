package cni

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// The OVS code logs through controller-runtime, as netshift-cni's binary
// discards it; so do its tests (else a warning and a stack trace after 30 s).
func init() { ctrllog.SetLogger(logr.Discard()) }

// podNetns makes a sandbox's network namespace and returns its path.
func podNetns(t testing.TB, name string) string {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return "/run/netns/" + name
}

// linkIn reads a device of a namespace: its index, MAC and whether it is up.
func linkIn(t testing.TB, ns, name string) (index int, mac string, up, found bool) {
	t.Helper()
	_ = netdev.InNetns(ns, func() error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return nil
		}
		index, mac, up, found = l.Attrs().Index, l.Attrs().HardwareAddr.String(), l.Attrs().Flags&net.FlagUp != 0, true
		return nil
	})
	return
}

// TestParkedDeviceIsTakenByTheNextPod, against a real ovs-vswitchd and real
// namespaces: a pooled pod's DEL parks its device (the pod end on the node,
// down, under the port's parked name; the node end and the switch's port
// untouched, nobody's); the next pod handed the same port takes that very
// device (same node end, same OpenFlow port), carries the port's MAC and
// address, and reaches another pod through the switch. A node whose parked
// devices are at the limit unplugs instead.
func TestParkedDeviceIsTakenByTheNextPod(t *testing.T) {
	for _, mode := range []plug.Mode{plug.Direct, plug.PerPort} {
		t.Run(string(mode), func(t *testing.T) {
			sw := ovstest.Start(t)
			ctx := context.Background()
			pool := &PoolConfig{Node: "n1", OVSDB: sw.Socket, Bridge: "br-int", ParkedDevices: 1}
			short := map[plug.Mode]string{plug.Direct: "d", plug.PerPort: "p"}[mode]
			node := parkingNode{t: t, sw: sw, pool: pool, mode: mode}
			wire, del := node.wire, node.del
			side := func(p plug.Port) string {
				if mode == plug.PerPort {
					return plug.NamesFor(p.ID).IntegrationPatch
				}
				return p.Tap
			}

			p1, if1 := testPort(1)
			a := podNetns(t, "nspark-"+short+"a")
			if wire("ns/a", a, p1, if1) {
				t.Fatal("the first pod took a parked device where none was")
			}
			hostIndex, _, _, _ := linkIn(t, sw.Netns, p1.Tap)
			ofportBefore := sw.Vsctl("get", "interface", side(p1), "ofport")

			if !del("ns/a", a, p1) {
				t.Fatal("the DEL did not park the device")
			}
			parkedName := plug.NamesFor(p1.ID).Parked
			if _, _, _, found := linkIn(t, a, "eth0"); found {
				t.Error("the parked pod end is still in the pod's namespace")
			}
			if _, mac, up, found := linkIn(t, sw.Netns, parkedName); !found || up || mac != p1.MAC {
				t.Errorf("parked pod end %s on the node: found %v, up %v, MAC %s; want it there, down, with the port's MAC %s", parkedName, found, up, mac, p1.MAC)
			}
			if idx, _, _, found := linkIn(t, sw.Netns, p1.Tap); !found || idx != hostIndex {
				t.Errorf("the node end %s was re-made (index %d, was %d) or removed (found %v)", p1.Tap, idx, hostIndex, found)
			}
			pl, _ := sw.DB.Plugged(ctx)
			if len(pl) != 1 || !pl[0].Parked() || pl[0].Owner != "" {
				t.Fatalf("the switch after the DEL: %+v, want the port parked, nobody's", pl)
			}

			// The next pod of the pool gets the same port: it takes the device as it is.
			b := podNetns(t, "nspark-"+short+"b")
			if !wire("ns/b", b, p1, if1) {
				t.Fatal("the next pod handed the port did not take its parked device")
			}
			if idx, _, up, _ := linkIn(t, sw.Netns, p1.Tap); idx != hostIndex || !up {
				t.Errorf("node end %s after the take: index %d (was %d), up %v", p1.Tap, idx, hostIndex, up)
			}
			if got := sw.Vsctl("get", "interface", side(p1), "ofport"); got != ofportBefore {
				t.Errorf("the switch re-attached the port: ofport %s, was %s", got, ofportBefore)
			}
			if _, _, _, found := linkIn(t, sw.Netns, parkedName); found {
				t.Error("the parked name is still on the node after the take")
			}
			if err := (podLink{Netns: b, IfName: "eth0"}).check(if1); err != nil {
				t.Errorf("the taken device: %v", err)
			}
			if pl, _ := sw.DB.Plugged(ctx); len(pl) != 1 || pl[0].Parked() || pl[0].Owner != "ns/b" {
				t.Errorf("the switch after the take: %+v, want the port ns/b's", pl)
			}
			// Through the switch to a pod wired the usual way.
			p2, if2 := testPort(2)
			c := podNetns(t, "nspark-"+short+"c")
			wire("ns/c", c, p2, if2)
			if err := tcpEcho(c, b, "10.245.0.2:7000"); err != nil {
				t.Errorf("the pod on the taken device does not reach the other pod: %v", err)
			}

			// At the limit (one parked device), the second DEL unplugs instead.
			if !del("ns/b", b, p1) {
				t.Fatal("the DEL of the second pod did not park")
			}
			if del("ns/c", c, p2) {
				t.Fatal("a DEL parked past the node's limit of 1")
			}
			if _, _, _, found := linkIn(t, sw.Netns, p2.Tap); found {
				t.Error("the unparked pod's node end is still on the node")
			}
			pl, _ = sw.DB.Plugged(ctx)
			if len(pl) != 1 || pl[0].PortID != p1.ID || !pl[0].Parked() {
				t.Errorf("the switch at the end: %+v, want only port 1, parked", pl)
			}
			if strings.Contains(sw.Vsctl("--columns=name", "list", "interface"), p2.Tap) {
				t.Error("the unplugged port's tap is still in the switch")
			}
		})
	}
}

// testPort is pooled port i of the tests: its ID (unique in its first 11
// characters, as taps and bridges need), MAC and address.
func testPort(i int) (plug.Port, portpool.Interface) {
	p := plug.Port{ID: fmt.Sprintf("7a2c%04d-0000-4000-8000-000000000000", i), MAC: fmt.Sprintf("0a:58:0a:f5:00:%02x", i)}.WithDefaults("uid")
	mac, _ := net.ParseMAC(p.MAC)
	return p, portpool.Interface{MAC: mac, Addresses: []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.245.0.%d/24", i))}}
}

// parkingNode runs netshift-cni's ADD and DEL of pooled pods on a real
// switch, in the switch's namespace as the node's.
type parkingNode struct {
	t    testing.TB
	sw   *ovstest.Switch
	pool *PoolConfig
	mode plug.Mode
	// gone are the pods deleted from the API (their sandboxes may live on).
	gone map[string]bool
}

func (n parkingNode) holderGone(pod string) bool { return n.gone[pod] }

// wire does what ADD does for pod: through its port's parked device if the
// node has one (true), else a fresh one.
func (n parkingNode) wire(pod, ns string, p plug.Port, iface portpool.Interface) bool {
	n.t.Helper()
	ctx := context.Background()
	link := podLink{Netns: ns, IfName: "eth0", HostName: p.Tap, MTU: 1400, TxChecksumOff: true}
	var reused bool
	err := netdev.InNetns(n.sw.Netns, func() (err error) {
		reused, err = wirePort(ctx, n.sw.DB, n.pool, link, n.mode, p, pod, "netdev", iface, n.holderGone)
		return err
	})
	if err != nil {
		n.t.Fatalf("wire %s: %v", pod, err)
	}
	return reused
}

// del does what DEL does: parks the device if the node may (true), else unwires.
func (n parkingNode) del(pod, ns string, p plug.Port) (parked bool) {
	n.t.Helper()
	ctx := context.Background()
	st := sandboxState{Pod: pod, PortID: p.ID, Mode: n.mode, Tap: p.Tap, Netns: ns}
	err := netdev.InNetns(n.sw.Netns, func() (err error) {
		parked, err = undoWiring(ctx, n.sw.DB, n.pool, st, ns, "eth0")
		return err
	})
	if err != nil {
		n.t.Fatalf("DEL of %s: %v", pod, err)
	}
	return parked
}

// TestPortHandedOnBeforeTheOldSandboxsDEL: the pool hands a port on once
// its pod is deleted from the API, but the kubelet may tear that pod's
// sandbox down later. The new pod's ADD takes the stale plug over (a live
// pod's plug it refuses), and the old sandbox's DEL, coming after, leaves
// the new pod's node end and plug alone: the new pod still reaches another.
func TestPortHandedOnBeforeTheOldSandboxsDEL(t *testing.T) {
	sw := ovstest.Start(t)
	node := parkingNode{t: t, sw: sw, pool: &PoolConfig{Node: "n1", OVSDB: sw.Socket, Bridge: "br-int"}, mode: plug.PerPort, gone: map[string]bool{}}
	p1, if1 := testPort(1)
	old, next := podNetns(t, "nshand-old"), podNetns(t, "nshand-new")
	node.wire("ns/old", old, p1, if1)

	// While the old pod lives, the port is not taken from it.
	err := netdev.InNetns(sw.Netns, func() error {
		return plugPooled(context.Background(), sw.DB, node.pool, node.mode, p1, "ns/new", "netdev", 0, node.holderGone)
	})
	if !errors.Is(err, plug.ErrNameTaken) {
		t.Fatalf("plugging a live pod's port for another: %v, want ErrNameTaken", err)
	}
	if pl, _ := sw.PluggedPort(p1.ID); pl.Owner != "ns/old" {
		t.Fatalf("a refused take-over changed the plug: %+v", pl)
	}

	// A retried sandbox of the same pod replaces its device, and serves traffic.
	retried := podNetns(t, "nshand-retry")
	node.wire("ns/old", retried, p1, if1)
	p3, if3 := testPort(3)
	peer := podNetns(t, "nshand-peer")
	node.wire("ns/peer", peer, p3, if3)
	if err := tcpEcho(peer, retried, "10.245.0.3:7002"); err != nil {
		t.Errorf("a retried sandbox's new device does not reach another pod: %v", err)
	}
	old = retried

	node.gone["ns/old"] = true
	node.wire("ns/new", next, p1, if1)
	if pl, _ := sw.PluggedPort(p1.ID); pl.Owner != "ns/new" {
		t.Fatalf("after the new pod's ADD the port is plugged for %q, want ns/new", pl.Owner)
	}
	hostIndex, _, _, _ := linkIn(t, sw.Netns, p1.Tap)
	if node.del("ns/old", old, p1) {
		t.Fatal("the old sandbox's DEL parked a port it no longer holds")
	}
	if idx, _, up, found := linkIn(t, sw.Netns, p1.Tap); !found || idx != hostIndex || !up {
		t.Fatalf("the old sandbox's DEL took the new pod's node end %s (found %v, index %d was %d, up %v)", p1.Tap, found, idx, hostIndex, up)
	}
	if pl, ok := sw.PluggedPort(p1.ID); !ok || pl.Owner != "ns/new" {
		t.Fatalf("the old sandbox's DEL took the new pod's plug: %+v (plugged %v)", pl, ok)
	}
	p2, if2 := testPort(2)
	other := podNetns(t, "nshand-other")
	node.wire("ns/other", other, p2, if2)
	if err := tcpEcho(other, next, "10.245.0.2:7001"); err != nil {
		t.Errorf("the new pod does not reach another after the old sandbox's DEL: %v", err)
	}
}

// BenchmarkPooledPodWiring is netshift-cni's ADD of a pooled pod on a real
// switch (no network controller: what it saves in the OVN lab's bindings is
// the pod bench's churn), side by side: with a fresh device (a veth made and
// plugged), and with the device its port's previous pod left parked. Each
// iteration's DEL (unwiring, or parking) is outside the timing.
func BenchmarkPooledPodWiring(b *testing.B) {
	for _, c := range []struct {
		name   string
		parked int
	}{{"fresh", 0}, {"parked", 1}} {
		b.Run(c.name, func(b *testing.B) {
			sw := ovstest.Start(b)
			node := parkingNode{t: b, sw: sw, pool: &PoolConfig{Node: "n1", OVSDB: sw.Socket, Bridge: "br-int", ParkedDevices: c.parked}, mode: plug.PerPort}
			p, iface := testPort(1)
			sandboxes := []string{podNetns(b, "nsbench-"+c.name+"-a"), podNetns(b, "nsbench-"+c.name+"-b")}
			node.wire("ns/warm", sandboxes[1], p, iface)
			node.del("ns/warm", sandboxes[1], p)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pod, ns := fmt.Sprintf("ns/pod-%d", i), sandboxes[i%2]
				if reused := node.wire(pod, ns, p, iface); reused != (c.parked > 0) {
					b.Fatalf("pod %d: took a parked device %v, want %v", i, reused, c.parked > 0)
				}
				b.StopTimer()
				node.del(pod, ns, p)
				b.StartTimer()
			}
		})
	}
}

// tcpEcho listens at addr in namespace server and checks that a client in
// namespace client gets its bytes echoed.
func tcpEcho(server, client, addr string) error {
	var ln net.Listener
	if err := netdev.InNetns(server, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		return fmt.Errorf("listen in %s: %w", server, err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = io.Copy(conn, conn)
	}()
	return netdev.InNetns(client, func() error {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("parked")); err != nil {
			return err
		}
		got := make([]byte, 6)
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != "parked" {
			return fmt.Errorf("echo %q: %v", got, err)
		}
		return nil
	})
}
