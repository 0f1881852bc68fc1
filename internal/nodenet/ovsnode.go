package nodenet

import (
	"context"
	"fmt"
	"strings"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/ovs"
)

// OVSNode is a node whose pods hang off an Open vSwitch integration bridge
// by veths (the lab's plugin, OVN-Kubernetes): what its MTU steps set.
type OVSNode struct {
	// Node names the node in errors.
	Node string
	// Netns is the node's network namespace ("": the agent's own).
	Netns string
	// Pods lists the node's pods from its container runtime.
	Pods NodePods
	// Switch is the node's OVSDB.
	Switch *ovs.Switch
	// Bridge is the integration bridge (default br-int).
	Bridge string
}

// Integration is the integration bridge's name.
func (n *OVSNode) Integration() string {
	if n.Bridge == "" {
		return "br-int"
	}
	return n.Bridge
}

func (n *OVSNode) ovsdb() (*ovs.Switch, error) {
	if n.Switch == nil {
		return nil, fmt.Errorf("node %s: the agent has no OVSDB (--ovsdb)", n.Node)
	}
	return n.Switch, nil
}

// SetPodMTU sets every pod interface of the node to mtu.
func (n *OVSNode) SetPodMTU(ctx context.Context, mtu int) (netplugin.Outcome, error) {
	pods, o, err := ListPods(ctx, n.Node, n.Pods)
	if err != nil {
		return o, err
	}
	SetPods(ctx, pods, mtu, &o)
	return o, nil
}

// HostEnds are the node ends of the pods' links that may be set: those the
// pod's network plugin reported that are, on the node's OVS, a system device
// on the integration bridge or on a per-port bridge, and a veth in the node's
// namespace. Anything else a CNI result names is left alone.
func (n *OVSNode) HostEnds(ctx context.Context, pods []PodNetwork, o *netplugin.Outcome) ([]string, error) {
	sw, err := n.ovsdb()
	if err != nil {
		return nil, err
	}
	ports, err := sw.PodPorts(ctx, n.Integration())
	if err != nil {
		return nil, fmt.Errorf("node %s: pod ports: %w", n.Node, err)
	}
	h, err := netdev.Open(n.Netns)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Node, err)
	}
	defer h.Close()
	var ends []string
	for _, p := range pods {
		for _, name := range p.HostInterfaces {
			port, ok := ports[name]
			if !ok || port.Type != "" {
				o.Skip("pod %s: node end %s is not a pod port of %s or a per-port bridge", p.Pod, name, n.Integration())
				continue
			}
			if kind, err := h.Kind(name); err != nil || kind != "veth" {
				o.Skip("pod %s: node end %s is not a veth in the node's namespace", p.Pod, name)
				continue
			}
			ends = append(ends, name)
		}
	}
	return ends, nil
}

// SetHostVethMTU sets the node ends of the pods' links to mtu. A node end is
// the node's own device: failing to set one fails the step.
func (n *OVSNode) SetHostVethMTU(ctx context.Context, mtu int) (netplugin.Outcome, error) {
	pods, o, err := ListPods(ctx, n.Node, n.Pods)
	if err != nil {
		return o, err
	}
	ends, err := n.HostEnds(ctx, pods, &o)
	if err != nil {
		return o, err
	}
	var errs []string
	for _, e := range ends {
		if err := SetMTU(ctx, n.Netns, e, mtu); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		o.Changed++
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("node %s: %s", n.Node, strings.Join(errs, "; "))
	}
	return o, nil
}

// NodePorts are the node's own ports into the pod network: the internal
// interfaces of its integration bridge, read from its OVS.
func (n *OVSNode) NodePorts(ctx context.Context) ([]string, error) {
	sw, err := n.ovsdb()
	if err != nil {
		return nil, err
	}
	ports, err := sw.PodPorts(ctx, n.Integration())
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Node, err)
	}
	var names []string
	for name, p := range ports {
		if p.Bridge == n.Integration() && p.Type == "internal" {
			names = append(names, name)
		}
	}
	return names, nil
}

// SetNodePortMTU sets the node's own ports' mtu_request, which ovs-vswitchd
// applies and keeps.
func (n *OVSNode) SetNodePortMTU(ctx context.Context, mtu int) (netplugin.Outcome, error) {
	names, err := n.NodePorts(ctx)
	if err != nil {
		return netplugin.Outcome{}, err
	}
	if err := n.Switch.SetMTURequest(ctx, mtu, names...); err != nil {
		return netplugin.Outcome{}, fmt.Errorf("node %s: %w", n.Node, err)
	}
	return netplugin.Outcome{Changed: len(names)}, nil
}

// Align gives every pod whose interface differs from mtu that MTU, its node
// end first.
func (n *OVSNode) Align(ctx context.Context, mtu int) (netplugin.Outcome, error) {
	pods, o, err := ListPods(ctx, n.Node, n.Pods)
	if err != nil {
		return o, err
	}
	differ := Differing(pods, mtu)
	if len(differ) == 0 {
		return o, nil
	}
	if n.Switch != nil {
		ends, err := n.HostEnds(ctx, differ, &o)
		if err != nil {
			return o, err
		}
		for _, e := range ends {
			_ = SetMTU(ctx, n.Netns, e, mtu)
		}
	}
	SetPods(ctx, differ, mtu, &o)
	return o, nil
}

// CheckPodMTU verifies every pod interface the node can read has mtu.
func (n *OVSNode) CheckPodMTU(ctx context.Context, mtu int) error {
	pods, _, err := ListPods(ctx, n.Node, n.Pods)
	if err != nil {
		return err
	}
	return CheckPods(pods, mtu)
}

// CheckHostVethMTU verifies every node end netshift may set has mtu.
func (n *OVSNode) CheckHostVethMTU(ctx context.Context, mtu int) error {
	pods, _, err := ListPods(ctx, n.Node, n.Pods)
	if err != nil {
		return err
	}
	ends, err := n.HostEnds(ctx, pods, &netplugin.Outcome{})
	if err != nil {
		return err
	}
	for _, e := range ends {
		if got, err := LinkMTU(n.Netns, e); err != nil {
			return err
		} else if got != mtu {
			return fmt.Errorf("node end %s has MTU %d, want %d", e, got, mtu)
		}
	}
	return nil
}
