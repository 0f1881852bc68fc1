package nodenet

import (
	"context"
	"fmt"

	"netshift.io/netshift/internal/netplugin"
)

// ListPods lists the node's pods, the outcome starting with those it could not read.
func ListPods(ctx context.Context, node string, pods NodePods) ([]PodNetwork, netplugin.Outcome, error) {
	list, skipped, err := pods.PodNetworks(ctx)
	if err != nil {
		return nil, netplugin.Outcome{}, fmt.Errorf("node %s: list pods: %w", node, err)
	}
	return list, netplugin.Outcome{Skipped: skipped}, nil
}

// SetPods sets the pods' interfaces to mtu, skipping (with why) those it
// cannot set: what a pod does to itself (its interface renamed, the pod gone
// before the step) never fails the node.
func SetPods(ctx context.Context, pods []PodNetwork, mtu int, o *netplugin.Outcome) {
	for _, p := range pods {
		for _, ifc := range p.Interfaces {
			if err := SetMTU(ctx, p.Netns, ifc, mtu); err != nil {
				o.Skip("pod %s: %s: %v", p.Pod, ifc, err)
				continue
			}
			o.Changed++
		}
	}
}

// Differing are the pods with an interface whose MTU is not mtu.
func Differing(pods []PodNetwork, mtu int) []PodNetwork {
	var differ []PodNetwork
	for _, p := range pods {
		for _, ifc := range p.Interfaces {
			if got, err := LinkMTU(p.Netns, ifc); err == nil && got != mtu {
				differ = append(differ, p)
				break
			}
		}
	}
	return differ
}

// CheckPods verifies every pod interface the node can read has mtu.
func CheckPods(pods []PodNetwork, mtu int) error {
	for _, p := range pods {
		for _, ifc := range p.Interfaces {
			if got, err := LinkMTU(p.Netns, ifc); err == nil && got != mtu {
				return fmt.Errorf("pod %s: %s has MTU %d, want %d", p.Pod, ifc, got, mtu)
			}
		}
	}
	return nil
}

// CommonMTU is the MTU most of the pods' eth0 have (the smaller on a tie), 0 when none can be read.
func CommonMTU(pods []PodNetwork) int {
	count := map[int]int{}
	for _, p := range pods {
		if mtu, err := LinkMTU(p.Netns, "eth0"); err == nil {
			count[mtu]++
		}
	}
	best := 0
	for mtu, n := range count {
		if n > count[best] || (n == count[best] && mtu < best) {
			best = mtu
		}
	}
	return best
}
