package heldframes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/netdev"
)

const (
	// Forward is how long after the VM spoke the agent still gives it what
	// comes to the bridge's own port: until the datapath has dropped its
	// cached hold (vswitchd revalidates within a few hundred milliseconds).
	Forward = 2 * time.Second
	// Expire is the longest a hold waits for its VM; past it, held frames
	// are dropped at the bridge as they would be without the agent, and the
	// VM's first frame still opens the bridge.
	Expire = 30 * time.Minute
	// receiveTimeout is how often a hold waiting for frames looks at its clock.
	receiveTimeout = 100 * time.Millisecond
)

// Options say what to hold for.
type Options struct {
	// Netns is the namespace of the bridge's device ("" for the caller's).
	Netns string
	// Device is the port bridge's own (LOCAL) device, named as the bridge.
	Device string
	// VM is the MAC of the VM's port.
	VM net.HardwareAddr
	// Window, MaxFrames, Forward and Expire of 0 are the package's.
	Window          time.Duration
	MaxFrames       int
	Forward, Expire time.Duration
}

// Hold is an open hold: the bridge's own device up with no address of its
// own and a packet socket on it.
type Hold struct {
	o       Options
	fd      int
	ifindex int
	keeper  *Keeper
}

// Open brings the bridge's own device up (without an IPv6 address, so the
// host sends nothing through it) and opens a packet socket on it. Open it
// before the bridge's hold flows send anything there.
func Open(o Options) (*Hold, error) {
	if o.Forward <= 0 {
		o.Forward = Forward
	}
	if o.Expire <= 0 {
		o.Expire = Expire
	}
	h := &Hold{o: o, fd: -1, keeper: NewKeeper(o.Window, o.MaxFrames)}
	err := netdev.InNetns(o.Netns, func() error {
		link, err := netlink.LinkByName(o.Device)
		if err != nil {
			return err
		}
		h.ifindex = link.Attrs().Index
		// No link-local address: no router solicitation nor DAD from the host.
		// A kernel without IPv6 refuses this, and sends no IPv6 either.
		err = netlink.LinkSetIP6AddrGenMode(link, 1) // IN6_ADDR_GEN_MODE_NONE
		if err != nil && !errors.Is(err, unix.EAFNOSUPPORT) && !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("no IPv6 address of its own: %w", err)
		}
		if err := netlink.LinkSetUp(link); err != nil {
			return fmt.Errorf("set up: %w", err)
		}
		h.fd, err = packetSocket(h.ifindex)
		return err
	})
	if err != nil {
		h.close()
		return nil, fmt.Errorf("hold frames for VM %s at %s: %w", o.VM, o.Device, err)
	}
	return h, nil
}

// packetSocket opens a packet socket on a device, with each frame's VLAN tag,
// checksum state and arrival time.
func packetSocket(ifindex int) (fd int, err error) {
	// Protocol 0 until bound: no frame of another device is queued.
	if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	tv := unix.NsecToTimeval(receiveTimeout.Nanoseconds())
	for _, set := range []struct {
		what string
		err  error
	}{
		{"receive timeout", unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)},
		// The kernel hands a frame's VLAN tag and checksum state apart from it.
		{"auxiliary data", unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1)},
		// Arrival times from the kernel: a busy node reads late.
		{"timestamps", unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)},
		{"bind", unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: netdev.Htons(unix.ETH_P_ALL), Ifindex: ifindex})},
	} {
		if set.err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("packet socket: %s: %w", set.what, set.err)
		}
	}
	return fd, nil
}

// Serve holds until the VM speaks, gives it the newest held frames and what
// follows for Forward, then sets the device down and closes. It ends early
// when the device goes (the port was unplugged; an error if the VM had not
// spoken) or ctx ends, and after Expire without the VM.
func (h *Hold) Serve(ctx context.Context) (Stats, error) {
	defer h.close()
	start := time.Now()
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for {
		now := time.Now()
		switch st := h.keeper.Stats; {
		case ctx.Err() != nil:
			return st, ctx.Err()
		case st.Spoke && now.Sub(st.SpokeAt) > h.o.Forward, !st.Spoke && now.Sub(start) > h.o.Expire:
			return st, nil
		}
		n, oobn, flags, from, err := unix.Recvmsg(h.fd, buf, oob, 0)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case err != nil && h.keeper.Stats.Spoke && errors.Is(err, unix.ENETDOWN):
			return h.keeper.Stats, nil // the port went, its VM served
		case err != nil:
			return h.keeper.Stats, fmt.Errorf("hold frames for VM %s at %s: %w", h.o.VM, h.o.Device, err)
		}
		// Only what the bridge sends its own port counts, never what the
		// host sends through it.
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		frame, at, ok := received(buf[:n], oob[:oobn], flags)
		if !ok {
			h.keeper.Stats.Unfit++
			continue
		}
		for _, f := range h.keeper.Frame(frame, at) {
			h.give(f)
		}
	}
}

// received is a frame as it reached the device, its VLAN tag put back, and
// when; not ok if it cannot be given again as it is: cut short, or with a
// checksum left to the hardware (segmentation offload comes with one).
func received(data, oob []byte, flags int) (frame []byte, at time.Time, ok bool) {
	if flags&unix.MSG_TRUNC != 0 {
		return nil, time.Time{}, false
	}
	frame, at = data, time.Now()
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, time.Time{}, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_PACKET && m.Header.Type == unix.PACKET_AUXDATA && len(m.Data) >= int(unsafe.Sizeof(unix.TpacketAuxdata{})):
			aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&m.Data[0]))
			if aux.Status&unix.TP_STATUS_CSUMNOTREADY != 0 {
				return nil, time.Time{}, false
			}
			if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 {
				tpid := uint16(unix.ETH_P_8021Q)
				if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
					tpid = aux.Vlan_tpid
				}
				frame = WithTag(frame, tpid, aux.Vlan_tci)
			}
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			at = time.Unix(ts.Unix())
		}
	}
	return frame, at, true
}

// give sends a frame back into the bridge, tagged for the VM. One the
// device refuses (larger than its MTU) is counted, and the rest still go.
func (h *Hold) give(frame []byte) {
	to := &unix.SockaddrLinklayer{Ifindex: h.ifindex, Protocol: netdev.Htons(unix.ETH_P_8021Q)}
	if err := unix.Sendto(h.fd, Tagged(frame), 0, to); err != nil {
		h.keeper.Stats.Unfit++
		if h.keeper.Stats.LastUnfit == "" {
			h.keeper.Stats.LastUnfit = fmt.Sprintf("give VM %s a held frame of %d bytes through %s: %v", h.o.VM, len(frame), h.o.Device, err)
		}
	}
}

// close closes the socket and sets the device down again: the bridge's
// flows then drop what still comes to it.
func (h *Hold) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
	_ = netdev.InNetns(h.o.Netns, func() error {
		link, err := netlink.LinkByName(h.o.Device)
		if err != nil {
			return err // gone with its bridge
		}
		return netlink.LinkSetDown(link)
	})
}
