package neutron

import (
	"context"
	"fmt"

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
