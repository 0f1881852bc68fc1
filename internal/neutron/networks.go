package neutron

import (
	"context"
	"fmt"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
)

// CreateNetwork makes a network with one IPv4 subnet (tests and labs).
func (c *Client) CreateNetwork(ctx context.Context, project, name, cidr string) (string, error) {
	var n struct {
		Network struct {
			ID string `json:"id"`
		} `json:"network"`
	}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("networks"), map[string]any{"network": map[string]any{"name": name, "project_id": project}}, &n,
		&gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return "", fmt.Errorf("neutron: create network %s: %w", name, err)
	}
	subnet := map[string]any{"subnet": map[string]any{"network_id": n.Network.ID, "ip_version": 4, "cidr": cidr, "project_id": project}}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("subnets"), subnet, nil, &gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return "", fmt.Errorf("neutron: create subnet %s on network %s: %w", cidr, name, err)
	}
	return n.Network.ID, nil
}

// CreateSecurityGroup makes a security group (tests and labs).
func (c *Client) CreateSecurityGroup(ctx context.Context, project, name string) (string, error) {
	var g struct {
		Group struct {
			ID string `json:"id"`
		} `json:"security_group"`
	}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("security-groups"), map[string]any{"security_group": map[string]any{"name": name, "project_id": project}}, &g,
		&gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return "", fmt.Errorf("neutron: create security group %s: %w", name, err)
	}
	return g.Group.ID, nil
}

// Subnet is what a pod's interface needs of its port's subnet.
type Subnet struct {
	ID   string `json:"id"`
	CIDR string `json:"cidr"`
	// GatewayIP is "" for a subnet without a gateway.
	GatewayIP string `json:"gateway_ip"`
}

// Subnets lists a network's subnets.
func (c *Client) Subnets(ctx context.Context, network string) ([]Subnet, error) {
	var s struct {
		Subnets []Subnet `json:"subnets"`
	}
	u := c.sc.ServiceURL("subnets") + "?" + url.Values{"network_id": {network}}.Encode()
	if _, err := c.sc.Get(ctx, u, &s, nil); err != nil {
		return nil, fmt.Errorf("neutron: subnets of network %s: %w", network, err)
	}
	return s.Subnets, nil
}

// Network is what a pod's interface needs of its port's network.
type Network struct {
	ID string `json:"id"`
	// MTU is the largest packet the network carries (Neutron's, from its type's overhead).
	MTU int `json:"mtu"`
}

// Network reads one network.
func (c *Client) Network(ctx context.Context, id string) (Network, error) {
	var n struct {
		Network Network `json:"network"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("networks", id), &n, nil); err != nil {
		return Network{}, fmt.Errorf("neutron: network %s: %w", id, err)
	}
	return n.Network, nil
}

// AllowIngressIPv4 adds to a security group a rule letting in every IPv4
// packet (tests and labs: a new group lets nothing in).
func (c *Client) AllowIngressIPv4(ctx context.Context, project, group string) error {
	rule := map[string]any{"security_group_rule": map[string]any{"security_group_id": group, "direction": "ingress", "ethertype": "IPv4",
		"remote_ip_prefix": "0.0.0.0/0", "project_id": project}}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("security-group-rules"), rule, nil, &gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return fmt.Errorf("neutron: security group %s: allow IPv4 in: %w", group, err)
	}
	return nil
}
