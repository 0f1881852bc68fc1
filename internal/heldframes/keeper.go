package heldframes

import (
	"bytes"
	"encoding/binary"
	"net"
	"time"
)

const (
	// Window is how far back from the VM's first frame held frames are given
	// to it. Older ones arrived while the source VM still ran and took them
	// (OVN sends a migrating port's frames to both chassis); newer ones
	// arrived while it was stopped or after it resumed, and reached nobody.
	// The VM's first frame is the hypervisor's announcement, which QEMU sends
	// as it resumes the guest; the window leaves a slow one room. A migration
	// whose stop is shorter than the window gets the frames of the
	// difference twice, which TCP and UDP applications take, as IP allows.
	Window = 50 * time.Millisecond
	// MaxFrames bounds what one held port keeps, whatever its rate.
	MaxFrames = 256
	// VLAN tags the frames the agent gives back through the bridge's own
	// port: the bridge passes those to the VM, untagged, and nothing else
	// that comes from that port (the host's own packets, should it send any).
	VLAN = 4094
)

// Spoke is the destination the bridge writes into its copy of the VM's first
// frame for the agent: the signal that the VM speaks. The bridge drops any
// frame sent there that comes from the integration bridge, so only that copy
// carries it, whatever a neighbour without port security sends.
var Spoke = net.HardwareAddr{0x02, 0x6e, 0x73, 0x68, 0x66, 0x01}

// Keeper decides what becomes of each frame the held bridge sends its own
// port: held until the VM speaks, then the newest given to it. It does no
// I/O and reads no clock, so every case is a unit test.
type Keeper struct {
	window time.Duration
	max    int
	held   []heldFrame
	Stats  Stats
}

type heldFrame struct {
	at   time.Time
	data []byte
}

// Stats is what a hold did, for the agent's log.
type Stats struct {
	// Held frames came from the integration bridge before the VM spoke;
	// Replayed of them were given to it, and Forwarded came after.
	Held, Replayed, Forwarded int
	// Unfit frames could not be taken or given as they came (cut short, a
	// checksum or segmentation left to the hardware, refused on the way
	// back): the VM misses them, as it would without the agent. LastUnfit
	// says why the first refused one was.
	Unfit     int
	LastUnfit string
	// Spoke says the VM's first frame was seen, SpokeAt when.
	Spoke   bool
	SpokeAt time.Time
}

// NewKeeper holds for one VM; window and max of 0 are Window and MaxFrames.
func NewKeeper(window time.Duration, max int) *Keeper {
	if window <= 0 {
		window = Window
	}
	if max <= 0 {
		max = MaxFrames
	}
	return &Keeper{window: window, max: max}
}

// Frame takes a frame that arrived at the bridge's own port at a moment and
// says which frames to give the VM now (untagged; Tagged marks them for the
// bridge). The bridge's copy of the VM's first frame (see Spoke) is the
// signal, and is not given back.
func (k *Keeper) Frame(frame []byte, at time.Time) (give [][]byte) {
	if len(frame) < 14 {
		return nil
	}
	if bytes.Equal(frame[0:6], Spoke) {
		if k.Stats.Spoke {
			return nil
		}
		k.Stats.Spoke, k.Stats.SpokeAt = true, at
		k.prune(at)
		for _, h := range k.held {
			give = append(give, h.data)
		}
		k.Stats.Replayed = len(give)
		k.held = nil
		return give
	}
	if k.Stats.Spoke {
		k.Stats.Forwarded++
		return [][]byte{frame}
	}
	k.Stats.Held++
	k.held = append(k.held, heldFrame{at: at, data: bytes.Clone(frame)})
	k.prune(at)
	return nil
}

// prune forgets the frames older than the window before now, and the
// oldest over the bound.
func (k *Keeper) prune(now time.Time) {
	drop := 0
	for drop < len(k.held) && (now.Sub(k.held[drop].at) > k.window || len(k.held)-drop > k.max) {
		drop++
	}
	if drop > 0 {
		k.held = append(k.held[:0], k.held[drop:]...)
	}
}

// Kept is how many frames are held now.
func (k *Keeper) Kept() int { return len(k.held) }

// Tagged is the frame with an 802.1Q header of VLAN after its addresses.
func Tagged(frame []byte) []byte { return WithTag(frame, 0x8100, VLAN) }

// WithTag is the frame with a VLAN header (tpid, tci) after its addresses:
// how a tag the kernel took out of a received frame is put back.
func WithTag(frame []byte, tpid, tci uint16) []byte {
	if len(frame) < 12 {
		return nil
	}
	out := make([]byte, 0, len(frame)+4)
	out = append(out, frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, frame[12:]...)
}
