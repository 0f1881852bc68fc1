package simnode

import (
	"context"
	"fmt"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
)

// The node's network plugin driver: the steps of plugins whose pods hang off
// an Open vSwitch bridge (netplugin's shared steps), on the node's memory.

func (n *Node) Check(_ context.Context, plan *v1alpha1.LiveChangePlan) netplugin.Findings {
	var f netplugin.Findings
	n.mu.Lock()
	defer n.mu.Unlock()
	switch plan.Kind {
	case v1alpha1.ChangeMTU:
		f.WouldChange = append(f.WouldChange, fmt.Sprintf("%d simulated pods' eth0 and their node ends: MTU %d -> %d", len(n.podMTU), plan.From, plan.To))
	case v1alpha1.ChangeVXLANPort, v1alpha1.ChangeGenevePort:
		if plan.Encapsulation != n.encap {
			f.Problems = append(f.Problems, fmt.Sprintf("the node's tunnels are %s, not %s", n.encap, plan.Encapsulation))
		}
		f.WouldChange = append(f.WouldChange, fmt.Sprintf("the simulated %s tunnels: port %d -> %d", n.encap, plan.From, plan.To))
	}
	return f
}

func (n *Node) Arm(_ context.Context, _ *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (netplugin.Armed, error) {
	value := int(step.Value)
	var run func(context.Context) (netplugin.Outcome, error)
	switch step.Action {
	case netplugin.StepPodMTU:
		run = func(ctx context.Context) (netplugin.Outcome, error) { return n.setMTUs(ctx, n.podMTU, value) }
	case netplugin.StepHostVethMTU:
		run = func(ctx context.Context) (netplugin.Outcome, error) { return n.setMTUs(ctx, n.hostEndMTU, value) }
	case netplugin.StepNodePortMTU:
		run = func(ctx context.Context) (netplugin.Outcome, error) {
			if err := n.take(ctx, n.timings.Interface, 1); err != nil {
				return netplugin.Outcome{}, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.nodePortMTU = value
			return netplugin.Outcome{Changed: 1}, nil
		}
	case netplugin.StepTunnelPort:
		run = func(ctx context.Context) (netplugin.Outcome, error) {
			if err := n.take(ctx, n.timings.TunnelPort, 1); err != nil {
				return netplugin.Outcome{}, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.tunnelPort = value
			return netplugin.Outcome{Changed: 1, Committed: n.Now()}, nil
		}
	default:
		return netplugin.Armed{}, fmt.Errorf("node %s: the simulated driver has no step %q", n.name, step.Action)
	}
	return netplugin.Whole(func(ctx context.Context) (netplugin.Outcome, error) {
		if n.failing(step.Action) {
			return netplugin.Outcome{}, fmt.Errorf("node %s: %s %w", n.name, step.Action, errInjected)
		}
		return run(ctx)
	}), nil
}

// failing says whether this run of step is one a test asked to fail.
func (n *Node) failing(step v1alpha1.StepAction) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failNext[step] == 0 {
		return false
	}
	n.failNext[step]--
	return true
}

// setMTUs gives each interface of mtus the MTU value, taking one interface's time each.
func (n *Node) setMTUs(ctx context.Context, mtus []int, value int) (netplugin.Outcome, error) {
	if err := n.take(ctx, n.timings.Interface, len(mtus)); err != nil {
		return netplugin.Outcome{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	o := netplugin.Outcome{}
	for i := range mtus {
		if mtus[i] != value {
			mtus[i] = value
			o.Changed++
		}
	}
	return o, nil
}

func (n *Node) Carries(_ context.Context, network v1alpha1.NodeNetworkConfig) error {
	mtu, port, _ := n.Network()
	if mtu != int(network.MTU) {
		return fmt.Errorf("node %s: its pods do not all carry MTU %d", n.name, network.MTU)
	}
	if network.TunnelPort != 0 && port != int(network.TunnelPort) {
		return fmt.Errorf("node %s: its tunnels use port %d, not %d", n.name, port, network.TunnelPort)
	}
	return nil
}

func (n *Node) Align(ctx context.Context, mtu int) (netplugin.Outcome, error) {
	a, err := n.setMTUs(ctx, n.podMTU, mtu)
	if err != nil {
		return a, err
	}
	b, err := n.setMTUs(ctx, n.hostEndMTU, mtu)
	a.Changed += b.Changed
	return a, err
}

func (n *Node) Observe(_ context.Context, o *v1alpha1.ObservedNetwork) error {
	mtu, port, _ := n.Network()
	n.mu.Lock()
	defer n.mu.Unlock()
	if o.MTU == 0 && mtu != 0 {
		o.MTU, o.MTUFrom = int32(mtu), "pods"
	}
	o.Encapsulation, o.TunnelPort = n.encap, int32(port)
	return nil
}
