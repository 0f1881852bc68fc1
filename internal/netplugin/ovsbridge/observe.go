package ovsbridge

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodenet"
)

// defaultPorts are the ports a tunnel without one of its own uses.
var defaultPorts = map[string]int32{"vxlan": 4789, "geneve": 6081}

// Observe reads the MTU most of the node's pods have (when the node has no
// configuration of netshift's to read it from), and the tunnels' protocol and
// port from the node's Open vSwitch, or else from its kernel's tunnel devices.
func (n *Node) Observe(ctx context.Context, o *v1alpha1.ObservedNetwork) error {
	var errs []error
	if err := n.observeMTU(ctx, o); err != nil {
		errs = append(errs, fmt.Errorf("pod MTU: %w", err))
	}
	if err := n.observeTunnels(ctx, o); err != nil {
		errs = append(errs, fmt.Errorf("tunnels: %w", err))
	}
	return errors.Join(errs...)
}

func (n *Node) observeMTU(ctx context.Context, o *v1alpha1.ObservedNetwork) error {
	if o.MTU != 0 || n.env.Pods == nil {
		return nil
	}
	pods, _, err := n.env.Pods.PodNetworks(ctx)
	if err != nil {
		return err
	}
	if mtu := nodenet.CommonMTU(pods); mtu > 0 {
		o.MTU, o.MTUFrom = int32(mtu), "Pods"
	}
	return nil
}

func (n *Node) observeTunnels(ctx context.Context, o *v1alpha1.ObservedNetwork) error {
	if n.env.Switch != nil {
		tunnels, err := n.env.Switch.Tunnels(ctx)
		if err != nil {
			return err
		}
		if len(tunnels) > 0 {
			o.Encapsulation, o.TunnelPort = v1alpha1.Encapsulation(tunnels[0].Type), int32(tunnels[0].DstPort)
			if o.TunnelPort == 0 {
				o.TunnelPort = defaultPorts[tunnels[0].Type]
			}
			return nil
		}
	}
	h, err := netdev.Open(n.env.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	devs, err := h.TunnelDevices()
	if err != nil || len(devs) == 0 {
		return err
	}
	o.Encapsulation, o.TunnelPort = v1alpha1.Encapsulation(devs[0].Kind), int32(devs[0].Port)
	if o.TunnelPort == 0 {
		o.TunnelPort = defaultPorts[devs[0].Kind]
	}
	return nil
}

func logf(ctx context.Context, msg, node string, err error) {
	log.FromContext(ctx).Info(msg, "node", node, "error", err.Error())
}
