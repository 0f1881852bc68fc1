package agent

import (
	"context"
	"fmt"

	"netshift.io/netshift/internal/cri"
)

// PodNetwork is one pod's network on the node, as the node itself knows it.
type PodNetwork struct {
	// Pod names it (namespace/name) in logs and step reports.
	Pod string
	// Netns is the path of its network namespace.
	Netns string
	// Interfaces are its interfaces there, as its network plugin reported them.
	Interfaces []string
	// HostInterfaces are the node ends its network plugin reported: checked
	// against the node's OVS before anything is set on them.
	HostInterfaces []string
}

// NodePods lists the node's pods that have a network of their own. skipped
// names those that could not be read (gone while listed), each with why.
type NodePods interface {
	PodNetworks(ctx context.Context) (pods []PodNetwork, skipped []string, err error)
}

// RuntimePods reads the node's pods from its container runtime over the CRI,
// and enters each through its sandbox's process: the agent shares the node's
// process namespace (hostPID), so nothing of the runtime's own paths needs to
// be visible to it.
type RuntimePods struct {
	// Endpoint is the CRI socket (default unix:///run/containerd/containerd.sock).
	Endpoint string
	// ProcRoot is where the node's processes are (default /proc).
	ProcRoot string
}

// PodNetworks lists the ready sandboxes with a network namespace of their own.
func (r RuntimePods) PodNetworks(ctx context.Context) ([]PodNetwork, []string, error) {
	endpoint, proc := r.Endpoint, r.ProcRoot
	if endpoint == "" {
		endpoint = cri.DefaultEndpoint
	}
	if proc == "" {
		proc = "/proc"
	}
	c, err := cri.Dial(endpoint)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	sandboxes, err := c.Sandboxes(ctx)
	if err != nil {
		return nil, nil, err
	}
	var pods []PodNetwork
	var skipped []string
	for _, s := range sandboxes {
		path, err := s.NetnsPath(proc)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		pods = append(pods, PodNetwork{Pod: s.String(), Netns: path, Interfaces: s.PodInterfaces, HostInterfaces: s.HostInterfaces})
	}
	return pods, skipped, nil
}

// noPods is the source of an agent whose node has no runtime to ask.
type noPods struct{}

func (noPods) PodNetworks(context.Context) ([]PodNetwork, []string, error) {
	return nil, nil, fmt.Errorf("this agent has no container runtime to list its node's pods from (--cri-endpoint)")
}
