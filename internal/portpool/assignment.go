package portpool

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
)

// OptInLabel on a namespace ("enabled") gives its pods pooled ports.
const OptInLabel = "netshift.io/port-pools"

// Assignment is the port a pod owns, as the operator records it on the pod
// (the annotation netshift.io/port, which only the operator may write): the
// pod's ownership record, and what netshift-cni makes the pod's interface
// from.
type Assignment struct {
	ID  string   `json:"id"`
	MAC string   `json:"mac"`
	IPs []string `json:"ips,omitempty"`
	// Addresses are the IPs with their subnets' prefix lengths and gateways.
	Addresses []Address `json:"addresses,omitempty"`
	// MTU is the port's network's MTU: the pod's interface's, unless the
	// node's applied network configuration says less.
	MTU int `json:"mtu,omitempty"`
	// Pool is the pool's key (Key's one-line form).
	Pool string `json:"pool"`
	// SegmentationID is the VLAN of a trunk subport (pods in VMs).
	SegmentationID int `json:"segmentationID,omitempty"`
}

// ParseAssignment reads an ownership record.
func ParseAssignment(raw string) (Assignment, error) {
	var a Assignment
	if err := json.Unmarshal([]byte(raw), &a); err != nil || a.ID == "" {
		return Assignment{}, fmt.Errorf("%q: not a port assignment", raw)
	}
	return a, nil
}

// Interface is a pod's interface as a port's assignment makes it.
type Interface struct {
	MAC       net.HardwareAddr
	Addresses []netip.Prefix
	// Gateway is the pod's default route ("" none: the port's subnets have no gateway).
	Gateway netip.Addr
	// VLAN is the trunk subport's segmentation ID (0: the port is no subport).
	VLAN int
	// MTU is the network's (0: unknown).
	MTU int
}

// InterfaceOf checks an assignment and says what the pod's interface is
// made with: the port's MAC, each address with its subnet's prefix length,
// and the default route through the first IPv4 subnet's gateway (else the
// first gateway), which must lie inside its subnet.
func InterfaceOf(a Assignment) (Interface, error) {
	mac, err := net.ParseMAC(a.MAC)
	if err != nil || len(mac) != 6 || mac[0]&1 == 1 {
		return Interface{}, fmt.Errorf("port %s: mac %q: want a unicast Ethernet address", a.ID, a.MAC)
	}
	if len(a.Addresses) == 0 {
		return Interface{}, fmt.Errorf("port %s: the record has no addresses (an operator older than netshift-cni's pools?)", a.ID)
	}
	if a.SegmentationID < 0 || a.SegmentationID > 4094 {
		return Interface{}, fmt.Errorf("port %s: segmentationID %d: want 0 (no subport) or 1..4094", a.ID, a.SegmentationID)
	}
	if a.MTU != 0 && (a.MTU < 576 || a.MTU > 9216) {
		return Interface{}, fmt.Errorf("port %s: mtu %d: want 576..9216 (or 0: unknown)", a.ID, a.MTU)
	}
	i := Interface{MAC: mac, VLAN: a.SegmentationID, MTU: a.MTU}
	var gw4, gw netip.Addr
	for _, addr := range a.Addresses {
		p, err := netip.ParsePrefix(addr.CIDR)
		if err != nil || p.Addr() == p.Masked().Addr() && p.Bits() < p.Addr().BitLen()-1 {
			return Interface{}, fmt.Errorf("port %s: address %q: want an address with its subnet's prefix length (10.1.0.5/24)", a.ID, addr.CIDR)
		}
		i.Addresses = append(i.Addresses, p)
		if addr.Gateway == "" {
			continue
		}
		g, err := netip.ParseAddr(addr.Gateway)
		if err != nil || !p.Masked().Contains(g) || g == p.Addr() {
			return Interface{}, fmt.Errorf("port %s: gateway %q of %s: want another address inside %s", a.ID, addr.Gateway, addr.CIDR, p.Masked())
		}
		if g.Is4() && !gw4.IsValid() {
			gw4 = g
		}
		if !gw.IsValid() {
			gw = g
		}
	}
	i.Gateway = gw
	if gw4.IsValid() {
		i.Gateway = gw4
	}
	return i, nil
}
