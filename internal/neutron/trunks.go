package neutron

import (
	"context"
	"fmt"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
)

// Subport is a port of a trunk, on a VLAN.
type Subport struct {
	PortID           string `json:"port_id"`
	SegmentationType string `json:"segmentation_type"`
	SegmentationID   int    `json:"segmentation_id"`
}

// Trunk is a Neutron trunk: a parent port (a VM's) and its subports.
type Trunk struct {
	ID        string    `json:"id"`
	PortID    string    `json:"port_id"`
	ProjectID string    `json:"project_id"`
	Subports  []Subport `json:"sub_ports"`
}

// TrunkOfParent finds the trunk whose parent port is parent.
func (c *Client) TrunkOfParent(ctx context.Context, parent string) (Trunk, error) {
	var out struct {
		Trunks []Trunk `json:"trunks"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("trunks")+"?"+url.Values{"port_id": {parent}}.Encode(), &out, nil); err != nil {
		return Trunk{}, fmt.Errorf("neutron: find the trunk of parent port %s: %w", parent, err)
	}
	if len(out.Trunks) != 1 {
		return Trunk{}, fmt.Errorf("neutron: parent port %s has %d trunks, want 1", parent, len(out.Trunks))
	}
	return out.Trunks[0], nil
}

// ListTrunks lists every trunk.
func (c *Client) ListTrunks(ctx context.Context) ([]Trunk, error) {
	var out struct {
		Trunks []Trunk `json:"trunks"`
	}
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("trunks"), &out, nil); err != nil {
		return nil, fmt.Errorf("neutron: list trunks: %w", err)
	}
	return out.Trunks, nil
}

// CreateTrunk makes a trunk of a parent port.
func (c *Client) CreateTrunk(ctx context.Context, project, parent string) (Trunk, error) {
	var out struct {
		Trunk Trunk `json:"trunk"`
	}
	body := map[string]any{"trunk": map[string]any{"port_id": parent, "project_id": project}}
	if _, err := c.sc.Post(ctx, c.sc.ServiceURL("trunks"), body, &out, &gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		return Trunk{}, fmt.Errorf("neutron: create trunk of port %s: %w", parent, err)
	}
	return out.Trunk, nil
}

// AddSubports adds ports to a trunk in one request.
func (c *Client) AddSubports(ctx context.Context, trunk string, subports []Subport) error {
	if _, err := c.sc.Put(ctx, c.sc.ServiceURL("trunks", trunk, "add_subports"), map[string]any{"sub_ports": subports}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{200}}); err != nil {
		return fmt.Errorf("neutron: add %d subports to trunk %s: %w", len(subports), trunk, err)
	}
	return nil
}

// RemoveSubports takes ports off a trunk in one request.
func (c *Client) RemoveSubports(ctx context.Context, trunk string, portIDs []string) error {
	subs := make([]map[string]string, len(portIDs))
	for i, id := range portIDs {
		subs[i] = map[string]string{"port_id": id}
	}
	if _, err := c.sc.Put(ctx, c.sc.ServiceURL("trunks", trunk, "remove_subports"), map[string]any{"sub_ports": subs}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{200}}); err != nil {
		return fmt.Errorf("neutron: remove %d subports from trunk %s: %w", len(portIDs), trunk, err)
	}
	return nil
}
