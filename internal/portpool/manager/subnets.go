package manager

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
)

// subnetCache holds the pools' networks: their MTUs and subnets. A pod's interface
// needs each of its port's addresses with the subnet's prefix length and
// gateway; a network's subnets are read once, before its first ports are
// made, so handing a port out never waits on Neutron for them.
type subnetCache struct {
	mu        sync.Mutex
	byNetwork map[string]networkInfo
}

// networkInfo is a network's MTU and its subnets by ID.
type networkInfo struct {
	mtu     int
	subnets map[string]neutron.Subnet
}

// of returns network's MTU and subnets, read from Neutron the first time or
// when refresh is set (a port names a subnet made since).
func (c *subnetCache) of(ctx context.Context, nc *neutron.Client, network string, refresh bool) (networkInfo, error) {
	c.mu.Lock()
	got, ok := c.byNetwork[network]
	c.mu.Unlock()
	if ok && !refresh {
		return got, nil
	}
	n, err := nc.Network(ctx, network)
	if err != nil {
		return networkInfo{}, err
	}
	list, err := nc.Subnets(ctx, network)
	if err != nil {
		return networkInfo{}, err
	}
	got = networkInfo{mtu: n.MTU, subnets: make(map[string]neutron.Subnet, len(list))}
	for _, s := range list {
		got.subnets[s.ID] = s
	}
	c.mu.Lock()
	if c.byNetwork == nil {
		c.byNetwork = map[string]networkInfo{}
	}
	c.byNetwork[network] = got
	c.mu.Unlock()
	return got, nil
}

// pooledPort is the pooled form of a Neutron port: its addresses as the
// pod's interface will carry them.
func (m *Manager) pooledPort(ctx context.Context, p neutron.Port) (portpool.Port, error) {
	info, err := m.subnets.of(ctx, m.neutron, p.NetworkID, false)
	if err != nil {
		return portpool.Port{}, fmt.Errorf("port %s: %w", p.ID, err)
	}
	addrs, err := addressesOf(p, info.subnets)
	if err != nil {
		if info, err = m.subnets.of(ctx, m.neutron, p.NetworkID, true); err != nil {
			return portpool.Port{}, fmt.Errorf("port %s: %w", p.ID, err)
		}
		if addrs, err = addressesOf(p, info.subnets); err != nil {
			return portpool.Port{}, err
		}
	}
	return portpool.Port{ID: p.ID, MAC: p.MACAddress, IPs: p.IPs(), Addresses: addrs, MTU: info.mtu}, nil
}

// addressesOf gives each of a port's fixed IPs its subnet's prefix length
// and gateway.
func addressesOf(p neutron.Port, subnets map[string]neutron.Subnet) ([]portpool.Address, error) {
	out := make([]portpool.Address, 0, len(p.FixedIPs))
	for _, f := range p.FixedIPs {
		s, ok := subnets[f.SubnetID]
		if !ok {
			return nil, fmt.Errorf("port %s: address %s: subnet %s is not one of network %s's", p.ID, f.IPAddress, f.SubnetID, p.NetworkID)
		}
		ip, err := netip.ParseAddr(f.IPAddress)
		if err != nil {
			return nil, fmt.Errorf("port %s: address %q: %w", p.ID, f.IPAddress, err)
		}
		prefix, err := netip.ParsePrefix(s.CIDR)
		if err != nil || !prefix.Contains(ip) {
			return nil, fmt.Errorf("port %s: address %s is not inside its subnet %s (%q)", p.ID, ip, s.ID, s.CIDR)
		}
		out = append(out, portpool.Address{CIDR: netip.PrefixFrom(ip, prefix.Bits()).String(), Gateway: s.GatewayIP})
	}
	return out, nil
}
