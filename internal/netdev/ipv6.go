package netdev

import (
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
)

// IPv6MinMTU is IPv6's least link MTU (RFC 8200): below it the kernel turns
// IPv6 off on the link and removes every IPv6 address it had.
const IPv6MinMTU = 1280

// IPv6Addresses are the link's IPv6 addresses other than link-local ones
// (those the kernel makes again when IPv6 comes back on) and loopback.
func (h *Handle) IPv6Addresses(link string) ([]netlink.Addr, error) {
	l, err := h.h.LinkByName(link)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.where(link), err)
	}
	addrs, err := h.h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		return nil, fmt.Errorf("IPv6 addresses of %s: %w", h.where(link), err)
	}
	out := addrs[:0]
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() && !a.IP.IsLoopback() {
			out = append(out, a)
		}
	}
	return out, nil
}

// dropped are the IPv6 addresses the kernel removed when SetMTU took a link
// below IPv6MinMTU, by namespace and link (and the link's index, so that a
// link made again under the same name gets none of its forerunner's): put
// back when an MTU at or above it is set again. A process's memory: an agent
// restarted in between has lost them, which the preconditions' refusal of
// such MTUs while any pod has IPv6 keeps to the rare race.
var dropped = struct {
	sync.Mutex
	addrs map[string][]netlink.Addr
}{addrs: map[string][]netlink.Addr{}}

func droppedKey(netns, link string, index int) string {
	return fmt.Sprintf("%s\x00%s\x00%d", netns, link, index)
}

// keepIPv6Before remembers the link's IPv6 addresses when mtu takes it below
// IPv6's least MTU from at or above it.
func (h *Handle) keepIPv6Before(l netlink.Link, mtu int) error {
	if mtu >= IPv6MinMTU || l.Attrs().MTU < IPv6MinMTU {
		return nil
	}
	addrs, err := h.IPv6Addresses(l.Attrs().Name)
	if err != nil || len(addrs) == 0 {
		return err
	}
	dropped.Lock()
	defer dropped.Unlock()
	dropped.addrs[droppedKey(h.netns, l.Attrs().Name, l.Attrs().Index)] = addrs
	return nil
}

// restoreIPv6After puts back the addresses kept when the link went below
// IPv6's least MTU, now that mtu takes it back to or above it.
func (h *Handle) restoreIPv6After(l netlink.Link, mtu int) error {
	if mtu < IPv6MinMTU {
		return nil
	}
	key := droppedKey(h.netns, l.Attrs().Name, l.Attrs().Index)
	dropped.Lock()
	addrs := dropped.addrs[key]
	delete(dropped.addrs, key)
	dropped.Unlock()
	for _, a := range addrs {
		a := a
		a.Flags &^= 0x80 // IFA_F_PERMANENT is the kernel's to set
		if err := h.h.AddrReplace(l, &a); err != nil {
			return fmt.Errorf("put IPv6 address %s back on %s: %w", a.IPNet, h.where(l.Attrs().Name), err)
		}
	}
	return nil
}

// HasIPv6 says whether any of the links holds an IPv6 address other than a
// link-local one, and names the first found ("pod default/web-1 eth0: fd00::1/64").
func HasIPv6(netns string, links []string) (string, error) {
	h, err := Open(netns)
	if err != nil {
		return "", err
	}
	defer h.Close()
	for _, link := range links {
		addrs, err := h.IPv6Addresses(link)
		if err != nil {
			return "", err
		}
		if len(addrs) > 0 {
			return fmt.Sprintf("%s: %s", link, addrs[0].IPNet), nil
		}
	}
	return "", nil
}
