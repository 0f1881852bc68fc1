// Package nodenet is what drivers share of a node's pod network: the pods
// from the node's container runtime, their interfaces and the node ends of
// their links, and MTUs set through netlink handles opened before a step's time.
package nodenet

import (
	"context"
	"fmt"
	"sync"

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
// be visible to it. It keeps one connection to the runtime, which remembers
// the sandboxes it has read (cri.Client).
type RuntimePods struct {
	// Endpoint is the CRI socket (default unix:///run/containerd/containerd.sock).
	Endpoint string
	// ProcRoot is where the node's processes are (default /proc).
	ProcRoot string

	once   sync.Once
	client *cri.Client
	dial   error
}

// PodNetworks lists the ready sandboxes with a network namespace of their own.
func (r *RuntimePods) PodNetworks(ctx context.Context) ([]PodNetwork, []string, error) {
	proc := r.ProcRoot
	if proc == "" {
		proc = "/proc"
	}
	r.once.Do(func() {
		endpoint := r.Endpoint
		if endpoint == "" {
			endpoint = cri.DefaultEndpoint
		}
		r.client, r.dial = cri.Dial(endpoint) // connects lazily, and again after the runtime restarts
	})
	if r.dial != nil {
		return nil, nil, r.dial
	}
	sandboxes, err := r.client.Sandboxes(ctx)
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

// NoPods is the source of an agent whose node has no runtime to ask.
type NoPods struct{}

func (NoPods) PodNetworks(context.Context) ([]PodNetwork, []string, error) {
	return nil, nil, fmt.Errorf("this agent has no container runtime to list its node's pods from (--cri-endpoint)")
}
