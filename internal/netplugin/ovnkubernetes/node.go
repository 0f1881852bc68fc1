package ovnkubernetes

import (
	"context"
	"fmt"
	"strings"

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

// Check is the bridge's, and for a Geneve port that the node's tunnels can
// take it: they are ovn-controller's, built from the southbound Encap rows,
// so the operator must hold them (the plan has no tunnel step of the
// node's), and the node must be in the central zone. In a zone of its own,
// ovnkube-controller (at the version tested) writes the other zones'
// chassis Encap rows without the port at every start, so the port would not
// hold. Nothing is touched.
func (n *Node) Check(ctx context.Context, plan *v1alpha1.LiveChangePlan) netplugin.Findings {
	f := n.Node.Check(ctx, plan)
	if plan.Kind != v1alpha1.ChangeGenevePort {
		return f
	}
	for _, st := range plan.Steps {
		if st.Action == netplugin.StepTunnelPort {
			f.Problems = append(f.Problems, "OVN-Kubernetes' tunnels are ovn-controller's, built from the southbound Encap rows: "+
				"the operator needs the central zone's southbound database (--ovn-sb) to change the Geneve port")
			return f
		}
	}
	if p := n.ownZone(ctx); p != "" {
		f.Problems = append(f.Problems, "the Geneve port cannot change here: "+p)
	}
	return f
}

// ownZone says why the node's zone cannot take a new Geneve port ("" when it
// can): its ovn-controller's southbound database is one of its own.
func (n *Node) ownZone(ctx context.Context) string {
	if n.env.Switch == nil {
		return "no Open vSwitch database to read the node's OVN zone from"
	}
	remote, err := n.env.Switch.OpenvSwitchExternalID(ctx, "ovn-remote")
	switch {
	case err != nil:
		return fmt.Sprintf("read the node's ovn-remote: %v", err)
	case remote == "":
		return "the node's ovn-controller has no southbound database (external_ids:ovn-remote is empty)"
	case strings.HasPrefix(remote, "unix:"):
		return fmt.Sprintf("the node is in an OVN zone of its own (ovn-remote %s): ovnkube-controller writes the other zones' chassis Encap rows "+
			"without the port at every start (at the version tested), so the new port would not hold; move the cluster to single zone first", remote)
	}
	return ""
}

// Arm prepares a step; the routes' runs whole at its time.
func (n *Node) Arm(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (netplugin.Armed, error) {
	if step.Action != StepRouteMTU {
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
