package cni

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/portpool"
)

// podLink is a pooled pod's link: a veth whose pod end is the pod's
// interface, made with its port's MAC and addresses, and whose node end
// carries the port's tap name and is plugged into the node's switch.
type podLink struct {
	Netns, IfName, HostName string
	MTU                     int
	TxChecksumOff           bool
}

// create makes the link. A node end of the same name is this port's from an
// earlier attempt (the name derives from the port's ID, which the pod owns)
// and is replaced; on an error, what was made is removed.
func (l podLink) create(iface portpool.Interface) (err error) {
	if err := deleteHostLink(l.HostName); err != nil {
		return err
	}
	podNS, err := netns.GetFromPath(l.Netns)
	if err != nil {
		return fmt.Errorf("pod namespace %s: %w", l.Netns, err)
	}
	defer podNS.Close()
	// The node end is made up: the switch may already hold an interface of
	// its name (the agent plugs the pod's port too, perhaps first) and opens
	// the device the moment it appears. Brought up only after, the switch's
	// own read-modify-write of the device's flags (it turns promiscuous mode
	// on) can put it down again, and the pod is cut off for good.
	attrs := netlink.LinkAttrs{Name: l.HostName, Flags: net.FlagUp}
	if l.MTU > 0 {
		attrs.MTU = l.MTU
	}
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: l.IfName,
		PeerNamespace: netlink.NsFd(int(podNS)), PeerHardwareAddr: iface.MAC}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth %s: %w", l.HostName, err)
	}
	defer func() {
		if err != nil {
			_ = netlink.LinkDel(veth)
		}
	}()
	if err := netdev.InNetns(l.Netns, func() error { return l.configurePodEnd(iface) }); err != nil {
		return fmt.Errorf("%s in %s: %w", l.IfName, l.Netns, err)
	}
	if l.TxChecksumOff {
		return netdev.SetTxChecksum(l.Netns, l.IfName, false)
	}
	return nil
}

// ensureHostUp brings the node end up again if something (the switch
// opening it) put it down.
func (l podLink) ensureHostUp() error {
	host, err := netlink.LinkByName(l.HostName)
	if err != nil {
		return fmt.Errorf("node end %s: %w", l.HostName, err)
	}
	if host.Attrs().Flags&net.FlagUp != 0 {
		return nil
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return fmt.Errorf("node end %s up: %w", l.HostName, err)
	}
	return nil
}

// configurePodEnd runs inside the pod's namespace.
func (l podLink) configurePodEnd(iface portpool.Interface) error {
	link, err := netlink.LinkByName(l.IfName)
	if err != nil {
		return err
	}
	if l.MTU > 0 {
		if err := netlink.LinkSetMTU(link, l.MTU); err != nil {
			return fmt.Errorf("MTU %d: %w", l.MTU, err)
		}
	}
	for _, a := range iface.Addresses {
		// No duplicate address detection: the address is Neutron's, held by this port alone.
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: prefixNet(a), Flags: nodad(a)}); err != nil {
			return fmt.Errorf("address %s: %w", a, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("up: %w", err)
	}
	if iface.Gateway.IsValid() {
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: net.IP(iface.Gateway.AsSlice())}); err != nil {
			return fmt.Errorf("default route via %s: %w", iface.Gateway, err)
		}
	}
	return nil
}

func nodad(p netip.Prefix) int {
	if p.Addr().Is6() {
		return 0x02 // IFA_F_NODAD
	}
	return 0
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// result is the CNI result of a made link: the node end, the pod end, its
// addresses and the default route.
func (l podLink) result(iface portpool.Interface) *current.Result {
	r := &current.Result{Interfaces: []*current.Interface{{Name: l.HostName, Mac: iface.MAC.String()},
		{Name: l.IfName, Mac: iface.MAC.String(), Sandbox: l.Netns, Mtu: l.MTU}}}
	pod := 1
	for _, a := range iface.Addresses {
		ip := &current.IPConfig{Address: *prefixNet(a), Interface: &pod}
		if iface.Gateway.IsValid() && a.Masked().Contains(iface.Gateway) {
			ip.Gateway = net.IP(iface.Gateway.AsSlice())
		}
		r.IPs = append(r.IPs, ip)
	}
	if iface.Gateway.IsValid() {
		bits := iface.Gateway.BitLen()
		r.Routes = append(r.Routes, &types.Route{Dst: net.IPNet{IP: make(net.IP, bits/8), Mask: net.CIDRMask(0, bits)}, GW: net.IP(iface.Gateway.AsSlice())})
	}
	return r
}

// check verifies the pod's interface carries the port's MAC and addresses.
func (l podLink) check(iface portpool.Interface) error {
	return netdev.InNetns(l.Netns, func() error {
		link, err := netlink.LinkByName(l.IfName)
		if err != nil {
			return fmt.Errorf("%s in %s: %w", l.IfName, l.Netns, err)
		}
		if got := link.Attrs().HardwareAddr; got.String() != iface.MAC.String() {
			return fmt.Errorf("%s has MAC %s, its port %s", l.IfName, got, iface.MAC)
		}
		addrs, err := netlink.AddrList(link, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		var have []string
		for _, a := range addrs {
			have = append(have, a.IPNet.String())
		}
		for _, want := range iface.Addresses {
			if !slices.Contains(have, prefixNet(want).String()) {
				return fmt.Errorf("%s lacks its port's address %s (has %v)", l.IfName, want, have)
			}
		}
		return nil
	})
}

// hostEndIsOurs says whether the node end named l.HostName is the peer of
// the pod end l.IfName in l.Netns.
func (l podLink) hostEndIsOurs() bool {
	if l.Netns == "" {
		return false
	}
	if _, err := os.Stat(l.Netns); err != nil {
		return false
	}
	peer := 0
	err := netdev.InNetns(l.Netns, func() error {
		link, err := netlink.LinkByName(l.IfName)
		if err != nil {
			return err
		}
		veth, ok := link.(*netlink.Veth)
		if !ok {
			return fmt.Errorf("%s is not a veth", l.IfName)
		}
		peer, err = netlink.VethPeerIndex(veth)
		return err
	})
	if err != nil {
		return false
	}
	host, err := netlink.LinkByName(l.HostName)
	return err == nil && host.Attrs().Index == peer
}

// deleteHostLink removes a pooled pod's node end if it is there.
func deleteHostLink(name string) error {
	link, err := netlink.LinkByName(name)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node end %s: %w", name, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete node end %s: %w", name, err)
	}
	return nil
}
