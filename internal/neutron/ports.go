package neutron

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/gophercloud/gophercloud/v2"
)

// Port is a Neutron port, the fields the pools use.
type Port struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	NetworkID      string    `json:"network_id"`
	ProjectID      string    `json:"project_id"`
	MACAddress     string    `json:"mac_address"`
	FixedIPs       []FixedIP `json:"fixed_ips"`
	DeviceID       string    `json:"device_id"`
	DeviceOwner    string    `json:"device_owner"`
	SecurityGroups []string  `json:"security_groups"`
	HostID         string    `json:"binding:host_id"`
	Status         string    `json:"status"`
	Tags           []string  `json:"tags"`
	Revision       int       `json:"revision_number"`
}

// FixedIP is one address of a port.
type FixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

// IPs are the port's addresses.
func (p Port) IPs() []string {
	out := make([]string, len(p.FixedIPs))
	for i, f := range p.FixedIPs {
		out[i] = f.IPAddress
	}
	return out
}

// NewPort is what a create request sets. SecurityGroups is always sent:
// Neutron gives a port created without the field the project's default group.
type NewPort struct {
	NetworkID      string   `json:"network_id"`
	ProjectID      string   `json:"project_id"`
	Name           string   `json:"name"`
	DeviceOwner    string   `json:"device_owner,omitempty"`
	SecurityGroups []string `json:"security_groups"`
	HostID         string   `json:"binding:host_id,omitempty"`
	// Tags are stored with the port in the create itself (extension driver
	// tag_ports_during_bulk_creation): no window in which a crash leaks an untagged port.
	Tags []string `json:"tags,omitempty"`
}

// PortUpdate changes a port's bookkeeping; nil fields are left alone.
type PortUpdate struct {
	Name           *string   `json:"name,omitempty"`
	DeviceID       *string   `json:"device_id,omitempty"`
	SecurityGroups *[]string `json:"security_groups,omitempty"`
	HostID         *string   `json:"binding:host_id,omitempty"`
	DeviceOwner    *string   `json:"device_owner,omitempty"`
}

// CreatePorts creates every port in ONE bulk request: Neutron creates all or none.
func (c *Client) CreatePorts(ctx context.Context, ports []NewPort) ([]Port, error) {
	if len(ports) == 0 {
		return nil, nil
	}
	body := map[string]any{"ports": ports}
	var out struct {
		Ports []Port `json:"ports"`
	}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("ports"), body, &out, &gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return nil, fmt.Errorf("neutron: bulk create of %d ports on network %s: %w", len(ports), ports[0].NetworkID, err)
	}
	if len(out.Ports) != len(ports) {
		return out.Ports, fmt.Errorf("neutron: bulk create of %d ports returned %d", len(ports), len(out.Ports))
	}
	return out.Ports, nil
}

// CreatePort creates one port.
func (c *Client) CreatePort(ctx context.Context, p NewPort) (Port, error) {
	var out struct {
		Port Port `json:"port"`
	}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("ports"), map[string]any{"port": p}, &out, &gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return Port{}, fmt.Errorf("neutron: create port on network %s: %w", p.NetworkID, err)
	}
	return out.Port, nil
}

// GetPort reads one port.
func (c *Client) GetPort(ctx context.Context, id string) (Port, error) {
	var out struct {
		Port Port `json:"port"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("ports", id), &out, nil); err != nil {
		return Port{}, fmt.Errorf("neutron: get port %s: %w", id, err)
	}
	return out.Port, nil
}

// UpdatePort changes a port's bookkeeping.
func (c *Client) UpdatePort(ctx context.Context, id string, u PortUpdate) (Port, error) {
	var out struct {
		Port Port `json:"port"`
	}
	if _, err := c.sc.Put(ctx, c.sc.ServiceURL("ports", id), map[string]any{"port": u}, &out, &gophercloud.RequestOpts{OkCodes: []int{200}}); err != nil {
		return Port{}, fmt.Errorf("neutron: update port %s: %w", id, err)
	}
	return out.Port, nil
}

// DeletePort deletes a port; one already gone is not an error.
func (c *Client) DeletePort(ctx context.Context, id string) error {
	if _, err := c.sc.Delete(ctx, c.sc.ServiceURL("ports", id), nil); err != nil && !NotFound(err) {
		return fmt.Errorf("neutron: delete port %s: %w", id, err)
	}
	return nil
}

// ListPorts lists the ports matching the filters (Neutron query parameters,
// e.g. tags, network_id, device_owner), following the pages.
func (c *Client) ListPorts(ctx context.Context, filters url.Values) ([]Port, error) {
	const page = 500
	var all []Port
	marker := ""
	for {
		q := url.Values{}
		for k, v := range filters {
			q[k] = v
		}
		q.Set("limit", strconv.Itoa(page))
		if marker != "" {
			q.Set("marker", marker)
		}
		var out struct {
			Ports []Port `json:"ports"`
		}
		if _, err := c.sc.Get(ctx, c.sc.ServiceURL("ports")+"?"+q.Encode(), &out, nil); err != nil {
			return nil, fmt.Errorf("neutron: list ports (%s): %w", filters.Encode(), err)
		}
		all = append(all, out.Ports...)
		if len(out.Ports) < page {
			return all, nil
		}
		marker = out.Ports[len(out.Ports)-1].ID
	}
}
