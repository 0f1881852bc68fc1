package nodenet

import (
	"context"
	"time"

	"netshift.io/netshift/internal/ovs"
)

// Env is what the agent gives a network plugin's node driver: the node's own
// parts, opened by the agent.
type Env struct {
	// Node is the node's name.
	Node string
	// Netns is the node's network namespace ("": the agent's own).
	Netns string
	// Pods lists the node's pods from its container runtime.
	Pods NodePods
	// Switch is the node's OVSDB; nil when the node has none (or the agent was given none).
	Switch *ovs.Switch
	// IntegrationBridge is the bridge the plugin attaches pods to (default br-int).
	IntegrationBridge string
	// OVNRunDir is where the agent sees the node's OVN run directory
	// (/var/run/ovn on the node): the sockets of databases the node serves.
	OVNRunDir string
	// LockPods holds off netshift-cni's set-up of new pods while a step sets
	// the pods' MTU, so that every pod is either listed by the step or set up
	// after it from the new configuration (taking nothing when the agent
	// holds it across the change's steps already); nil when the node has no
	// configuration of netshift's.
	LockPods func(context.Context) (unlock func(), err error)
	// Now is the agent's clock.
	Now func() time.Time
	// TunnelPortPath, when set (lab builds), may take a tunnel port step another way.
	TunnelPortPath TunnelPortPath
}

// TunnelPortPath is another way of taking the tunnel port step, for a lab
// build's benchmark (it compares the OVSDB client netshift uses with the exec
// of ovs-vsctl it replaced): Use says, at the step's arming, whether it takes
// it; Set then changes the tunnels' port at the step's time.
type TunnelPortPath interface {
	Use(ctx context.Context) bool
	Set(ctx context.Context, encapsulation string, port int) (changed int, err error)
}
