package ovsbridge

import (
	"context"
	"fmt"
	"strings"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/ovs"
)

// Node is the driver on a node.
type Node struct {
	env nodenet.Env
	ovs nodenet.OVSNode
}

// NewNode is the driver on the node env describes.
func NewNode(env nodenet.Env) *Node {
	return &Node{env: env, ovs: nodenet.OVSNode{Node: env.Node, Netns: env.Netns, Pods: env.Pods, Switch: env.Switch, Bridge: env.IntegrationBridge}}
}

var _ netplugin.Node = (*Node)(nil)

// Check lists what the steps would change and finds what stops them.
func (n *Node) Check(ctx context.Context, plan *v1alpha1.LiveChangePlan) netplugin.Findings {
	var f netplugin.Findings
	if n.env.Switch != nil {
		if err := n.env.Switch.Reachable(ctx); err != nil {
			f.Problems = append(f.Problems, "OVS is not reachable: "+err.Error())
		}
	}
	switch plan.Kind {
	case v1alpha1.ChangeMTU:
		if pods, _, err := n.env.Pods.PodNetworks(ctx); err != nil {
			f.Problems = append(f.Problems, "cannot list the node's pods: "+err.Error())
		} else {
			f.WouldChange = append(f.WouldChange, fmt.Sprintf("%d pods' eth0 and their node ends: MTU %d -> %d", len(pods), plan.From, plan.To))
		}
		if n.env.Switch != nil {
			f.WouldChange = append(f.WouldChange, fmt.Sprintf("the node's own ports on %s: MTU %d -> %d", n.ovs.Integration(), plan.From, plan.To))
			if plan.To < netdev.IPv6MinMTU {
				f.Problems = append(f.Problems, n.nodePortsIPv6(ctx, plan.To)...)
			}
		}
	case v1alpha1.ChangeVXLANPort, v1alpha1.ChangeGenevePort:
		// A node whose tunnels are not in its OVS (OVN's, changed in the southbound database)
		// has none of its own to list.
		if tunnels, err := n.tunnels(ctx, plan.Encapsulation); err != nil {
			f.Warnings = append(f.Warnings, "the node's tunnels were not listed: "+err.Error())
		} else if n.env.Switch != nil {
			f.WouldChange = append(f.WouldChange, fmt.Sprintf("%d %s tunnels (%s): port %d -> %d", len(tunnels), plan.Encapsulation,
				clipList(tunnels, 4), plan.From, plan.To))
		}
	}
	return f
}

// Arm prepares a step: the namespaces an MTU step enters are entered now,
// the tunnel port's transaction is built now from the switch's cache. A step
// that cannot be prepared runs whole at its time.
func (n *Node) Arm(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (netplugin.Armed, error) {
	mtu := int(step.Value)
	switch step.Action {
	case netplugin.StepPodMTU:
		return n.armMTU(ctx, true, func(ctx context.Context) (netplugin.Outcome, error) {
			unlock, err := n.lockPods(ctx)
			if err != nil {
				return netplugin.Outcome{}, err
			}
			defer unlock()
			return n.ovs.SetPodMTU(ctx, mtu)
		}), nil
	case netplugin.StepHostVethMTU:
		return n.armMTU(ctx, false, func(ctx context.Context) (netplugin.Outcome, error) { return n.ovs.SetHostVethMTU(ctx, mtu) }), nil
	case netplugin.StepNodePortMTU:
		return netplugin.Whole(func(ctx context.Context) (netplugin.Outcome, error) {
			if _, err := n.ovsdb(); err != nil {
				return netplugin.Outcome{}, err
			}
			return n.ovs.SetNodePortMTU(ctx, mtu)
		}), nil
	case netplugin.StepTunnelPort:
		return n.armTunnelPort(ctx, string(plan.Encapsulation), int(step.Value)), nil
	}
	return netplugin.Armed{}, fmt.Errorf("node %s: the %s driver has no step %q", n.env.Node, Name, step.Action)
}

// armMTU enters, before the step's time, the node's namespace and (for the
// pods' own step) each pod's known now; a pod set up meanwhile gets a handle
// at the step.
func (n *Node) armMTU(ctx context.Context, pods bool, run func(context.Context) (netplugin.Outcome, error)) netplugin.Armed {
	hs := nodenet.NewHandles()
	if _, err := hs.Get(n.env.Netns); err != nil {
		hs.Close()
		return netplugin.Whole(run)
	}
	if pods {
		if list, _, err := n.env.Pods.PodNetworks(ctx); err == nil {
			for _, p := range list {
				_, _ = hs.Get(p.Netns) // a pod gone meanwhile is the step's to skip
			}
		}
	}
	return netplugin.Armed{Fire: func(ctx context.Context) (netplugin.Outcome, error) { return run(nodenet.WithHandles(ctx, hs)) }, Release: hs.Close}
}

// armTunnelPort builds the tunnel port's transaction and opens its own
// connection: at its time the step's thread sends it and is the one woken by
// the reply.
func (n *Node) armTunnelPort(ctx context.Context, encap string, port int) netplugin.Armed {
	if p := n.env.TunnelPortPath; p != nil && n.env.Switch != nil && p.Use(ctx) {
		return netplugin.Whole(func(ctx context.Context) (netplugin.Outcome, error) {
			changed, err := p.Set(ctx, encap, port)
			return netplugin.Outcome{Changed: changed, Committed: n.env.Now()}, err
		})
	}
	whole := netplugin.Whole(func(ctx context.Context) (netplugin.Outcome, error) { return n.setTunnelPort(ctx, encap, port) })
	if n.env.Switch == nil {
		return whole
	}
	prepared, err := n.env.Switch.PrepareTunnelPort(ctx, encap, port)
	if err != nil {
		logf(ctx, "could not prepare the tunnel port step; it runs whole at its time", n.env.Node, err)
		return whole
	}
	if err := prepared.Arm(ctx); err != nil {
		logf(ctx, "could not open the tunnel port step's own OVSDB connection; it is sent through the agent's", n.env.Node, err)
	}
	return netplugin.Armed{Fire: func(ctx context.Context) (netplugin.Outcome, error) { return n.commit(ctx, prepared) }, Release: prepared.Release}
}

func (n *Node) setTunnelPort(ctx context.Context, encap string, port int) (netplugin.Outcome, error) {
	sw, err := n.ovsdb()
	if err != nil {
		return netplugin.Outcome{}, err
	}
	prepared, err := sw.PrepareTunnelPort(ctx, encap, port)
	if err != nil {
		return netplugin.Outcome{}, fmt.Errorf("node %s: %w", n.env.Node, err)
	}
	return n.commit(ctx, prepared)
}

func (n *Node) commit(ctx context.Context, prepared *ovs.Prepared) (netplugin.Outcome, error) {
	err := prepared.Commit(ctx)
	if err != nil {
		err = fmt.Errorf("node %s: %w", n.env.Node, err)
	}
	return netplugin.Outcome{Changed: len(prepared.Names), Committed: prepared.Committed}, err
}

// Carries reads back every pod's MTU, and through the node's OVS the node
// ends' MTU and the tunnels' port.
func (n *Node) Carries(ctx context.Context, network v1alpha1.NodeNetworkConfig) error {
	if err := n.ovs.CheckPodMTU(ctx, int(network.MTU)); err != nil {
		return err
	}
	if n.env.Switch == nil {
		return nil
	}
	if err := n.ovs.CheckHostVethMTU(ctx, int(network.MTU)); err != nil {
		return err
	}
	return n.checkTunnelPort(ctx, network.Encapsulation, int(network.TunnelPort))
}

func (n *Node) checkTunnelPort(ctx context.Context, encap v1alpha1.Encapsulation, port int) error {
	sw, err := n.ovsdb()
	if err != nil {
		return err
	}
	tunnels, err := sw.Tunnels(ctx)
	if err != nil {
		return err
	}
	for _, t := range tunnels {
		have := int32(t.DstPort)
		if have == 0 {
			have = defaultPorts[t.Type] // a tunnel without a port of its own uses its protocol's
		}
		if t.Type == string(encap) && int(have) != port {
			return fmt.Errorf("tunnel %s has port %d, want %d", t.Name, have, port)
		}
	}
	return nil
}

// Align gives the pods set up with another MTU this one, their node ends first.
func (n *Node) Align(ctx context.Context, mtu int) (netplugin.Outcome, error) {
	return n.ovs.Align(ctx, mtu)
}

func (n *Node) ovsdb() (*ovs.Switch, error) {
	if n.env.Switch == nil {
		return nil, fmt.Errorf("node %s: the agent has no OVSDB (--ovsdb)", n.env.Node)
	}
	return n.env.Switch, nil
}

func (n *Node) lockPods(ctx context.Context) (func(), error) {
	if n.env.LockPods == nil {
		return func() {}, nil
	}
	return n.env.LockPods(ctx)
}

// tunnels names the node's tunnel interfaces of an encapsulation.
func (n *Node) tunnels(ctx context.Context, encap v1alpha1.Encapsulation) ([]string, error) {
	if n.env.Switch == nil {
		return nil, nil
	}
	all, err := n.env.Switch.Tunnels(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range all {
		if t.Type == string(encap) {
			names = append(names, t.Name)
		}
	}
	return names, nil
}

// clipList shows at most n names and how many more there are.
func clipList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// nodePortsIPv6 says why MTU to cannot go on the node's own ports into the
// pod network: one has an IPv6 address the kernel would remove (the pods and
// their node ends are the agent's to check).
func (n *Node) nodePortsIPv6(ctx context.Context, to int32) []string {
	ports, err := n.ovs.NodePorts(ctx)
	if err == nil {
		var held string
		if held, err = netdev.HasIPv6(n.env.Netns, ports); held != "" {
			return []string{livechange.IPv6Problem(to, "the node's port "+held, nil)}
		}
	}
	if err != nil {
		return []string{fmt.Sprintf("MTU %d is below IPv6's least MTU of %d, and the node's own ports could not be checked for IPv6: %v", to, netdev.IPv6MinMTU, err)}
	}
	return nil
}
