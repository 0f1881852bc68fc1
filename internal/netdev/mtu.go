// Package netdev changes network devices through netlink, inside any network
// namespace, without leaving the calling goroutine's thread in it.
package netdev

import (
	"errors"
	"fmt"
	"net"
	"sort"

	"github.com/vishvananda/netlink"
)

// Handle is a netlink handle in one network namespace.
type Handle struct {
	netns string
	h     *netlink.Handle
}

// Open returns a handle in a network namespace: "" is the caller's own, an
// absolute path is a namespace file (a sandbox's), anything else a name under
// /run/netns.
func Open(netnsName string) (*Handle, error) {
	if netnsName == "" {
		h, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("netlink: %w", err)
		}
		return &Handle{h: h}, nil
	}
	ns, err := getNetns(netnsName)
	if err != nil {
		return nil, fmt.Errorf("network namespace %s: %w", netnsName, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in network namespace %s: %w", netnsName, err)
	}
	return &Handle{netns: netnsName, h: h}, nil
}

// Close releases the handle.
func (h *Handle) Close() { h.h.Close() }

func (h *Handle) where(link string) string {
	if h.netns == "" {
		return link
	}
	return link + " in " + h.netns
}

// SetMTU sets a link's MTU; setting the MTU it already has is a no-op. The
// IPv6 addresses the kernel removes when it takes the link below IPv6's
// least MTU are put back when a later call takes it to or above it again.
func (h *Handle) SetMTU(link string, mtu int) error {
	l, err := h.h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("%s: %w", h.where(link), err)
	}
	if l.Attrs().MTU == mtu {
		return nil
	}
	if err := h.keepIPv6Before(l, mtu); err != nil {
		return fmt.Errorf("set MTU %d on %s: %w", mtu, h.where(link), err)
	}
	if err := h.h.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("set MTU %d on %s: %w", mtu, h.where(link), err)
	}
	return h.restoreIPv6After(l, mtu)
}

// MTU reads a link's MTU.
func (h *Handle) MTU(link string) (int, error) {
	l, err := h.h.LinkByName(link)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", h.where(link), err)
	}
	return l.Attrs().MTU, nil
}

// Kind reads a link's type as netlink names it ("veth", "bridge", "openvswitch", ...).
func (h *Handle) Kind(link string) (string, error) {
	l, err := h.h.LinkByName(link)
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.where(link), err)
	}
	return l.Type(), nil
}

// MTUs reads every link's MTU in the handle's namespace, by name.
func (h *Handle) MTUs() (map[string]int, error) {
	links, err := h.h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links%s: %w", map[bool]string{true: " in " + h.netns, false: ""}[h.netns != ""], err)
	}
	out := make(map[string]int, len(links))
	for _, l := range links {
		out[l.Attrs().Name] = l.Attrs().MTU
	}
	return out, nil
}

// Device is what a network device of a namespace is: enough to tell a
// port's own tap or veth from a device the node uses.
type Device struct {
	// Kind is the link type as netlink names it ("tuntap", "veth", "device", "bridge", ...).
	Kind string
	// Master is the device it is enslaved to (a bridge, a bond, ovs-system), "" for none.
	Master string
	// Addresses are its IP addresses, IPv6 link-local ones left out.
	Addresses []string
}

// Device reads the device called name; found is false when there is none.
func (h *Handle) Device(name string) (dev Device, found bool, err error) {
	l, err := h.h.LinkByName(name)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return Device{}, false, nil
		}
		return Device{}, false, fmt.Errorf("%s: %w", h.where(name), err)
	}
	dev.Kind = l.Type()
	if idx := l.Attrs().MasterIndex; idx > 0 {
		dev.Master = fmt.Sprintf("ifindex %d", idx)
		if m, err := h.h.LinkByIndex(idx); err == nil {
			dev.Master = m.Attrs().Name
		}
	}
	addrs, err := h.h.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return Device{}, false, fmt.Errorf("addresses of %s: %w", h.where(name), err)
	}
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			dev.Addresses = append(dev.Addresses, a.IPNet.String())
		}
	}
	return dev, true, nil
}

// LinkWithAddress names the link that holds ip ("" when none does): the
// node's interface onto the underlay is the one holding its tunnel address.
func (h *Handle) LinkWithAddress(ip net.IP) (string, error) {
	addrs, err := h.h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return "", fmt.Errorf("addresses in %q: %w", h.netns, err)
	}
	for _, a := range addrs {
		if !a.IP.Equal(ip) {
			continue
		}
		l, err := h.h.LinkByIndex(a.LinkIndex)
		if err != nil {
			return "", fmt.Errorf("link %d holding %s in %q: %w", a.LinkIndex, ip, h.netns, err)
		}
		return l.Attrs().Name, nil
	}
	return "", nil
}

// TunnelDevice is a kernel VXLAN or Geneve device (a VXLAN overlay such as
// flannel's has one; OVS-based plugins' tunnels are in Open vSwitch).
type TunnelDevice struct {
	Name string
	// Kind is "vxlan" or "geneve".
	Kind string
	// Port is its UDP destination port.
	Port int
	MTU  int
}

// TunnelDevices lists the kernel's VXLAN and Geneve devices, by name.
func (h *Handle) TunnelDevices() ([]TunnelDevice, error) {
	links, err := h.h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("links in %q: %w", h.netns, err)
	}
	var out []TunnelDevice
	for _, l := range links {
		d := TunnelDevice{Name: l.Attrs().Name, MTU: l.Attrs().MTU}
		switch t := l.(type) {
		case *netlink.Vxlan:
			d.Kind, d.Port = "vxlan", t.Port
		case *netlink.Geneve:
			d.Kind, d.Port = "geneve", int(t.Dport)
		default:
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
