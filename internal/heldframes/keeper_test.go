package heldframes

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"
)

var (
	vmMAC   = net.HardwareAddr{0x0a, 0x58, 0xc6, 0x12, 0xfa, 0x0a}
	peerMAC = net.HardwareAddr{0x0a, 0x58, 0x0a, 0x00, 0x00, 0x07}
	t0      = time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
)

// frame is a frame from src whose payload is its number.
func frame(src net.HardwareAddr, seq uint16) []byte {
	f := make([]byte, 60)
	copy(f[0:6], vmMAC)
	if bytes.Equal(src, vmMAC) { // the bridge's copy of the VM's frame
		copy(f[0:6], Spoke)
	}
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], 0x88b5)
	binary.BigEndian.PutUint16(f[14:], seq)
	return f
}

func seqs(frames [][]byte) []uint16 {
	var out []uint16
	for _, f := range frames {
		out = append(out, binary.BigEndian.Uint16(f[14:]))
	}
	return out
}

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestTheVMGetsOnlyTheFramesOfTheLastWindow(t *testing.T) {
	cases := []struct {
		name    string
		arrived []int // ms, from the integration bridge
		spoke   int
		window  time.Duration
		max     int
		want    []uint16 // by order of arrival, from 1
	}{
		{name: "none held", spoke: 100, want: nil},
		{name: "all within", arrived: []int{60, 70, 99}, spoke: 100, want: []uint16{1, 2, 3}},
		{name: "the precopy's frames are not given", arrived: []int{0, 20, 40, 60, 80}, spoke: 100, want: []uint16{4, 5}},
		{name: "exactly the window back is given", arrived: []int{49, 50}, spoke: 100, want: []uint16{2}},
		{name: "a longer window", arrived: []int{0, 20, 40, 60, 80}, spoke: 100, window: 70 * time.Millisecond, want: []uint16{3, 4, 5}},
		{name: "the newest when over the bound", arrived: []int{90, 91, 92, 93, 94}, spoke: 100, max: 2, want: []uint16{4, 5}},
		{name: "old frames go while holding", arrived: []int{0, 1000, 2000, 2990}, spoke: 3000, want: []uint16{4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := NewKeeper(c.window, c.max)
			for i, at := range c.arrived {
				if give := k.Frame(frame(peerMAC, uint16(i+1)), ms(at)); give != nil {
					t.Fatalf("frame %d given before the VM spoke", i+1)
				}
			}
			if c.max > 0 && k.Kept() > c.max {
				t.Errorf("kept %d frames, bound %d", k.Kept(), c.max)
			}
			give := k.Frame(frame(vmMAC, 0), ms(c.spoke))
			if got := seqs(give); !slices.Equal(got, c.want) {
				t.Errorf("given %v, want %v", got, c.want)
			}
			if k.Stats.Held != len(c.arrived) || k.Stats.Replayed != len(c.want) || !k.Stats.Spoke || !k.Stats.SpokeAt.Equal(ms(c.spoke)) {
				t.Errorf("stats %+v", k.Stats)
			}
			if k.Kept() != 0 {
				t.Errorf("%d frames still kept after the VM spoke", k.Kept())
			}
		})
	}
}

// A held frame is the keeper's own copy: the socket's buffer is read into again.
func TestHeldFramesAreCopies(t *testing.T) {
	k := NewKeeper(0, 0)
	buf := frame(peerMAC, 1)
	k.Frame(buf, ms(0))
	binary.BigEndian.PutUint16(buf[14:], 9)
	if got := seqs(k.Frame(frame(vmMAC, 0), ms(1))); !slices.Equal(got, []uint16{1}) {
		t.Errorf("given %v, want the frame as it arrived", got)
	}
}

// A frame from the integration bridge with the VM's MAC as its source is
// held as any other: only the bridge's copy of the VM's frame, sent to
// Spoke, is the signal.
func TestAForgedSourceIsNotTheSignal(t *testing.T) {
	k := NewKeeper(0, 0)
	forged := frame(peerMAC, 1)
	copy(forged[6:12], vmMAC)
	if give := k.Frame(forged, ms(0)); give != nil || k.Stats.Spoke || k.Kept() != 1 {
		t.Errorf("a frame forging the VM's source: given %v, stats %+v", give, k.Stats)
	}
}

func TestRuntFramesAreIgnored(t *testing.T) {
	k := NewKeeper(0, 0)
	if k.Frame(vmMAC, ms(0)) != nil || k.Stats != (Stats{}) {
		t.Errorf("a 6-byte frame counted: %+v", k.Stats)
	}
}

func TestTaggedCarriesTheVLANAfterTheAddresses(t *testing.T) {
	f := frame(peerMAC, 7)
	got := Tagged(f)
	want := append(append(bytes.Clone(f[:12]), 0x81, 0x00, 0x0f, 0xfe), f[12:]...)
	if !bytes.Equal(got, want) {
		t.Errorf("tagged\n%x\nwant\n%x", got, want)
	}
	if Tagged(f[:11]) != nil {
		t.Error("a frame without its addresses was tagged")
	}
	// A tag the kernel took out is put back as it was (802.1ad, PCP 5, VLAN 101).
	q := WithTag(f, 0x88a8, 5<<13|101)
	if !bytes.Equal(q[12:16], []byte{0x88, 0xa8, 0xa0, 0x65}) || !bytes.Equal(q[16:], f[12:]) || !bytes.Equal(q[:12], f[:12]) {
		t.Errorf("tag put back: %x", q)
	}
}
