package agent

import (
	"context"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// underlayInterface is the node's interface onto the underlay, whose MTU a
// new pod MTU plus the tunnel's overhead must fit under: the one the agent
// was given, or else the one holding the node's tunnel address.
func (a *Agent) underlayInterface(ctx context.Context) (string, error) {
	if a.UnderlayInterface != "" {
		return a.UnderlayInterface, nil
	}
	ip, from, err := a.tunnelAddress(ctx)
	if err != nil {
		return "", err
	}
	link, err := a.host().LinkWithAddress(ip)
	if err != nil {
		return "", err
	}
	if link == "" {
		return "", fmt.Errorf("no interface of the node holds its %s %s (give the agent --underlay-interface)", from, ip)
	}
	return link, nil
}

// tunnelAddress is where the node's tunnels start: OVN's ovn-encap-ip in the
// node's Open vSwitch when the plugin set one (the first, when it lists
// several), else the Node's InternalIP, as its kubelet reports it. Both are
// written by the node's own components, never by a tenant.
func (a *Agent) tunnelAddress(ctx context.Context) (net.IP, string, error) {
	if a.Switch != nil {
		v, err := a.Switch.OpenvSwitchExternalID(ctx, "ovn-encap-ip")
		if err != nil {
			return nil, "", fmt.Errorf("read ovn-encap-ip: %w", err)
		}
		if first, _, _ := strings.Cut(v, ","); first != "" {
			ip := net.ParseIP(strings.TrimSpace(first))
			if ip == nil {
				return nil, "", fmt.Errorf("ovn-encap-ip %q is not an IP address", v)
			}
			return ip, "ovn-encap-ip", nil
		}
	}
	if a.Client == nil {
		return nil, "", fmt.Errorf("no ovn-encap-ip in the node's OVS and no API client to read Node %s's InternalIP", a.Node)
	}
	var node corev1.Node
	if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Node}, &node); err != nil {
		return nil, "", fmt.Errorf("read Node %s: %w", a.Node, err)
	}
	for _, addr := range node.Status.Addresses {
		if addr.Type == corev1.NodeInternalIP {
			if ip := net.ParseIP(addr.Address); ip != nil {
				return ip, "InternalIP", nil
			}
		}
	}
	return nil, "", fmt.Errorf("the Node %s reports no InternalIP", a.Node)
}
