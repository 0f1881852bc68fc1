package ovnkubernetes

import (
	"context"
	"fmt"
	"slices"

	"github.com/vishvananda/netlink"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/ovsbridge"
	"netshift.io/netshift/internal/nodenet"
)

// StepRouteMTU sets the MTU of the routes ovnkube-node locked to the pods'
// MTU: the service network's, through the gateway bridge or ovn-k8s-mp0.
const StepRouteMTU v1alpha1.StepAction = "RouteMTU"

// The node's devices ovnkube-node routes through.
const (
	ManagementPort = "ovn-k8s-mp0"
	GatewayBridge  = "breth0"
)

// Node is the driver on a node: the steps of a plugin on an Open vSwitch
// bridge, and the routes.
type Node struct {
	*ovsbridge.Node
	env nodenet.Env
}

// NewNode is the driver on the node env describes.
func NewNode(env nodenet.Env) *Node { return &Node{Node: ovsbridge.NewNode(env), env: env} }

var _ netplugin.Node = (*Node)(nil)

// Check is the bridge's, and for a Geneve port that the southbound database
// the node's ovn-controller builds its tunnels from can be reached and holds
// its zone's Geneve rows (the plan's steps are not scheduled yet: the node
// checks what its step would need). Nothing is touched.
func (n *Node) Check(ctx context.Context, plan *v1alpha1.LiveChangePlan) netplugin.Findings {
	f := n.Node.Check(ctx, plan)
	if plan.Kind != v1alpha1.ChangeGenevePort {
		return f
	}
	if slices.ContainsFunc(plan.Steps, func(s v1alpha1.ScheduledStep) bool { return s.Action == netplugin.StepTunnelPort }) {
		// An operator of an older netshift: the tunnels are ovn-controller's, never the bridge driver's to rewrite.
		f.Problems = append(f.Problems, "the Geneve port cannot change here: the plan gives the node a TunnelPort step, but OVN-Kubernetes' tunnels "+
			"are ovn-controller's, built from the southbound Encap rows (an operator of this version gives SouthboundEncapPort)")
		return f
	}
	n.checkEncapPort(ctx, plan, &f)
	return f
}

// Arm prepares a step; the routes' runs whole at its time, the southbound's
// is connected beforehand.
func (n *Node) Arm(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (netplugin.Armed, error) {
	switch step.Action {
	case StepEncapPort:
		return n.armEncapPort(ctx, step)
	case netplugin.StepTunnelPort:
		return netplugin.Armed{}, fmt.Errorf("node %s: OVN-Kubernetes' tunnels are ovn-controller's: no %s step", n.env.Node, step.Action)
	case StepRouteMTU:
	default:
		return n.Node.Arm(ctx, plan, step)
	}
	from, to := int(plan.From), int(step.Value) // a rollback's From is the value the change set
	return netplugin.Whole(func(context.Context) (netplugin.Outcome, error) { return n.setRouteMTU(from, to) }), nil
}

// setRouteMTU gives the routes through the plugin's devices whose MTU is
// from the MTU to; those already at to are done (a step run again).
func (n *Node) setRouteMTU(from, to int) (netplugin.Outcome, error) {
	var o netplugin.Outcome
	err := netdev.InNetns(n.env.Netns, func() error {
		for _, dev := range []string{ManagementPort, GatewayBridge} {
			link, err := netlink.LinkByName(dev)
			if err != nil {
				o.Skip("%s: %v", dev, err)
				continue
			}
			routes, err := netlink.RouteList(link, netlink.FAMILY_ALL)
			if err != nil {
				return fmt.Errorf("routes through %s: %w", dev, err)
			}
			for _, r := range routes {
				if r.MTU != from {
					if r.MTU != 0 && r.MTU != to {
						o.Skip("route %s through %s: MTU %d, neither %d nor %d", r.Dst, dev, r.MTU, from, to)
					}
					continue
				}
				r.MTU = to
				if err := netlink.RouteReplace(&r); err != nil {
					return fmt.Errorf("route %s through %s: set MTU %d: %w", r.Dst, dev, to, err)
				}
				o.Changed++
			}
		}
		return nil
	})
	if err != nil {
		return o, fmt.Errorf("node %s: %w", n.env.Node, err)
	}
	return o, nil
}
