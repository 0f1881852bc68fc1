package heldframes_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/heldframes"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
)

const portID = "4c1b2d3e-0000-4000-8000-00000000a001"

// vmSide is the far end of a VM's tap (a veth pair stands in for the
// hypervisor's tap): what the bridge gives the VM is read there, and the VM
// speaks from there.
type vmSide struct {
	fd, ifindex int
	mu          sync.Mutex
	got         []string // the test's frames received, in order: their number, and @VLAN if tagged
	other       int      // frames of the test's kind under another ethertype (a tag left on)
}

func openVMSide(t *testing.T, netns, dev string) *vmSide {
	t.Helper()
	v := &vmSide{}
	err := netdev.InNetns(netns, func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		v.ifindex = ifi.Index
		if v.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(v.fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			return err
		}
		return unix.Bind(v.fd, &unix.SockaddrLinklayer{Protocol: 0x0300, Ifindex: v.ifindex}) // ETH_P_ALL, network order
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(v.fd) })
	go v.read()
	return v
}

func (v *vmSide) read() {
	buf, oob := make([]byte, 2048), make([]byte, 256)
	for {
		n, oobn, _, from, err := unix.Recvmsg(v.fd, buf, oob, 0)
		if err != nil {
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING || n < 20 {
			continue
		}
		vlan := ""
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_PACKET && m.Header.Type == unix.PACKET_AUXDATA {
				aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&m.Data[0]))
				if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 {
					vlan = fmt.Sprintf("@%d", aux.Vlan_tci&0xfff)
				}
			}
		}
		v.mu.Lock()
		switch {
		case binary.BigEndian.Uint16(buf[12:]) == testType:
			v.got = append(v.got, fmt.Sprint(binary.BigEndian.Uint16(buf[14:]))+vlan)
		case binary.BigEndian.Uint16(buf[16:]) == testType:
			v.other++
		}
		v.mu.Unlock()
	}
}

func (v *vmSide) received() ([]string, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.got...), v.other
}

// speak sends the hypervisor's announcement from the VM.
func (v *vmSide) speak(t *testing.T, mac net.HardwareAddr) {
	t.Helper()
	to := &unix.SockaddrLinklayer{Ifindex: v.ifindex, Halen: 6}
	if err := unix.Sendto(v.fd, plug.RARPFrame(mac), 0, to); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until the VM received want and nothing else. In any order:
// the datapath keeps the order of one flow's frames only.
func (v *vmSide) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	slices.Sort(want)
	for {
		got, other := v.received()
		slices.Sort(got)
		if slices.Equal(got, want) && other == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the VM received %q (and %d frames under another tag), want %q", got, other, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testType is the ethertype of the test's numbered frames (IEEE's local experimental).
const testType = 0x88b5

type heldBridge struct {
	sw     *ovstest.Switch
	names  plug.Names
	mac    net.HardwareAddr
	patch  int
	vm     *vmSide
	served chan served
}

type served struct {
	stats heldframes.Stats
	err   error
}

// holdPort plugs a VM's port per-port and holds it as the agent does for a
// migration's target: the hold opened, then the flows; then the hypervisor
// makes the VM's tap, as QEMU does when its incoming VM starts.
func holdPort(t *testing.T, o heldframes.Options) *heldBridge {
	sw := ovstest.Start(t)
	ctx := context.Background()
	p := plug.Port{ID: portID, MAC: "0a:58:c6:12:fa:0a", VMUUID: "vm-1"}.WithDefaults("")
	b := &heldBridge{sw: sw, names: plug.NamesFor(portID), served: make(chan served, 1)}
	b.mac, _ = net.ParseMAC(p.MAC)
	if err := sw.DB.Plug(ctx, plug.PerPort, p, "vms/a", false, "br-int", "netdev"); err != nil {
		t.Fatal(err)
	}
	o.Netns, o.Device, o.VM = sw.Netns, b.names.Bridge, b.mac
	h, err := heldframes.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.DB.HoldForVM(ctx, portID); err != nil {
		t.Fatal(err)
	}
	go func() {
		st, err := h.Serve(context.Background())
		b.served <- served{st, err}
	}()
	sw.Run("ip", "-n", sw.Netns, "link", "add", p.Tap, "type", "veth", "peer", "name", "vm0")
	sw.Run("ip", "-n", sw.Netns, "link", "set", p.Tap, "up")
	// The VM sends nothing before it resumes: no IPv6 of the test's host.
	sw.Run("ip", "-n", sw.Netns, "link", "set", "vm0", "addrgenmode", "none")
	sw.Run("ip", "-n", sw.Netns, "link", "set", "vm0", "up")
	b.vm = openVMSide(t, sw.Netns, "vm0")
	deadline := time.Now().Add(5 * time.Second)
	for {
		ifaces, err := sw.DB.Interfaces(ctx, b.names.BridgePatch, p.Tap)
		if err != nil {
			t.Fatal(err)
		}
		if b.patch = ifaces[b.names.BridgePatch].OFPort; b.patch > 0 && ifaces[p.Tap].OFPort > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vswitchd never attached the tap: %+v", ifaces)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return b
}

// fromIntegration sends numbered frames for the VM into the port bridge as
// if br-int sent them through the patch port.
func (b *heldBridge) fromIntegration(t *testing.T, seqs ...uint16) {
	t.Helper()
	for _, seq := range seqs {
		b.packetOut(t, fmt.Sprintf("in_port=%d", b.patch), testFrame(b.mac, seq), "table")
	}
}

// packetOut sends a frame into the port bridge from a port, with actions.
func (b *heldBridge) packetOut(t *testing.T, from string, frame []byte, actions string) {
	t.Helper()
	b.sw.Run("ovs-ofctl", "packet-out", b.names.Bridge, fmt.Sprintf("%s,packet=%x,actions=%s", from, frame, actions))
}

// testFrame is a numbered frame for dst from a peer.
func testFrame(dst net.HardwareAddr, seq uint16) []byte {
	f := make([]byte, 60)
	copy(f[0:6], dst)
	copy(f[6:12], []byte{0x0a, 0x58, 0x0a, 0, 0, 7})
	binary.BigEndian.PutUint16(f[12:], testType)
	binary.BigEndian.PutUint16(f[14:], seq)
	return f
}

func (b *heldBridge) wait(t *testing.T) served {
	t.Helper()
	select {
	case s := <-b.served:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the hold never ended")
		return served{}
	}
}

// A migration as the VM's tap sees it: nothing while held, not even a frame
// forging the signal; when the VM speaks, the frames of the last window and
// not the older ones, with their own VLAN tag if they had one and without
// the agent's; then what still reaches the bridge's own port (the datapath's
// cached hold) and everything else; and when the hold is over, its device is
// down again.
func TestTheResumedVMGetsWhatArrivedWhileItWasHeld(t *testing.T) {
	b := holdPort(t, heldframes.Options{Window: 400 * time.Millisecond, Forward: 500 * time.Millisecond})
	b.fromIntegration(t, 1)
	time.Sleep(800 * time.Millisecond) // frame 1 is the precopy's: the source VM had it
	b.fromIntegration(t, 2, 3)
	// A subport's frame, VLAN 101 (the kernel hands the agent its tag apart).
	b.packetOut(t, fmt.Sprintf("in_port=%d", b.patch), heldframes.WithTag(testFrame(b.mac, 4), 0x8100, 101), "table")
	// A neighbour sending to the signal's address is dropped, not the signal.
	b.packetOut(t, fmt.Sprintf("in_port=%d", b.patch), testFrame(heldframes.Spoke, 99), "table")
	time.Sleep(100 * time.Millisecond)
	if got, other := b.vm.received(); len(got) > 0 || other > 0 {
		t.Fatalf("the VM received %q (and %d more) before it spoke", got, other)
	}
	b.vm.speak(t, b.mac)
	b.vm.waitFor(t, "2", "3", "4@101")
	b.packetOut(t, "in_port=none", testFrame(b.mac, 5), "LOCAL") // late, by the datapath's cached hold
	b.vm.waitFor(t, "2", "3", "4@101", "5")
	b.fromIntegration(t, 6)
	b.vm.waitFor(t, "2", "3", "4@101", "5", "6")

	s := b.wait(t)
	if s.err != nil || !s.stats.Spoke || s.stats.Held != 4 || s.stats.Replayed != 3 || s.stats.Forwarded != 1 || s.stats.Unfit != 0 {
		t.Errorf("the hold ended with %+v, %v; want 4 held, 3 given, 1 forwarded, the VM seen", s.stats, s.err)
	}
	if link := b.sw.Run("ip", "-n", b.sw.Netns, "-o", "link", "show", b.names.Bridge); strings.Contains(link, ",UP") {
		t.Errorf("the bridge's own device is still up after the hold: %s", link)
	}
	// The way stays open without the agent: learned both ways.
	b.fromIntegration(t, 7)
	b.vm.waitFor(t, "2", "3", "4@101", "5", "6", "7")
	flows := strings.Join(b.sw.Flows(b.names.Bridge), "\n")
	if !strings.Contains(flows, "priority=150,") || !strings.Contains(flows, "priority=250,") {
		t.Errorf("the VM's frame did not open the bridge both ways:\n%s", flows)
	}
}

// Frames from the bridge's own port that the agent did not tag (the host's)
// never reach the VM.
func TestOnlyTheHoldsFramesPassFromTheBridgesOwnPort(t *testing.T) {
	b := holdPort(t, heldframes.Options{})
	b.packetOut(t, "in_port=LOCAL", testFrame(b.mac, 1), "table")
	time.Sleep(200 * time.Millisecond)
	if got, _ := b.vm.received(); len(got) > 0 {
		t.Errorf("an untagged frame from the bridge's own port reached the VM: %v", got)
	}
}

// A hold whose port is unplugged ends, and says why.
func TestAHoldEndsWithItsBridge(t *testing.T) {
	b := holdPort(t, heldframes.Options{})
	b.fromIntegration(t, 1)
	pl, ok := b.sw.PluggedPort(portID)
	if !ok {
		t.Fatal("the port is not plugged")
	}
	if err := b.sw.DB.Unplug(context.Background(), pl, "br-int"); err != nil {
		t.Fatal(err)
	}
	if s := b.wait(t); s.err == nil || !strings.Contains(s.err.Error(), b.names.Bridge) || s.stats.Spoke {
		t.Errorf("the hold of an unplugged port ended with %+v, %v; want an error naming %s", s.stats, s.err, b.names.Bridge)
	}
}

// Open names the device it could not hold at.
func TestOpenWithoutTheBridge(t *testing.T) {
	sw := ovstest.Start(t)
	_, err := heldframes.Open(heldframes.Options{Netns: sw.Netns, Device: "pbr-nope", VM: net.HardwareAddr{2, 0, 0, 0, 0, 1}})
	if err == nil || !strings.Contains(err.Error(), "pbr-nope") {
		t.Errorf("a hold at a missing device: %v", err)
	}
}
