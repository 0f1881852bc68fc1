// Package nodehost is the node as netshift's agent reaches it apart from its
// network plugin's driver (package netplugin): the node's clock and the timer
// a live change's steps run on, its interfaces' MTU and addresses, its UDP
// ports, its boot, and the network configuration file netshift writes for new
// pods. Together with the driver it is the agent's data plane: everything
// above it (watches, plans, preconditions, steps at their time, reports,
// restore) is the same agent code on a real node and on a simulated one.
//
// The real node's implementation (Linux: netlink, /proc, a timerfd on a
// thread of its own, a file under flock) lives with the agent; package simnode
// has one in memory, for thousands of agents in one process.
package nodehost

import (
	"context"
	"net"
	"time"

	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
)

// Host is the node, apart from its network plugin.
type Host interface {
	Clock
	// LinkMTU is the MTU of the node's interface link.
	LinkMTU(link string) (int, error)
	// LinkWithAddress is the node's interface that holds ip ("" when none does).
	LinkWithAddress(ip net.IP) (string, error)
	// UDPPortUser says which socket holds UDP port on the node ("" when it is free).
	UDPPortUser(port int) (string, error)
	// IPv6Holder names a pod interface, or its node end, that holds an IPv6 address other than
	// a link-local one ("" when none does): an MTU under IPv6's least would remove it.
	IPv6Holder(ctx context.Context) (string, error)
	// BootID is the node's boot ID: it changes when the node reboots.
	BootID() (string, error)
	// ClockSynced says whether the node's kernel counts its clock synchronized (NTP).
	ClockSynced() (bool, error)
	// Config is the node's network configuration, nil when nothing on the node reads one.
	Config() Config
}

// Clock is the node's clock and the timer a live change's steps run on.
type Clock interface {
	// Now is the time by the node's clock.
	Now() time.Time
	// Approach waits until shortly before at (by Now), or until ctx ends:
	// the agent takes its last look at the plan then, and RunAt waits the rest.
	Approach(ctx context.Context, at time.Time) error
	// RunAt runs fire at at (by Now) and says when it began and ended. A Run
	// whose Began is zero never fired: err says why.
	RunAt(ctx context.Context, at time.Time, fire func(context.Context) (netplugin.Outcome, error)) (Run, error)
}

// Run is what RunAt measured of a step.
type Run struct {
	Began, Ended time.Time
	Outcome      netplugin.Outcome
	// Priority is what the thread that ran the step got from the node's scheduler.
	Priority string
}

// Config is the node's network configuration for new pods, which a live
// change rewrites as its last step.
type Config interface {
	// Name says where it is, for messages.
	Name() string
	// Lock holds it exclusively: the node's CNI sets up no pod meanwhile.
	Lock(ctx context.Context) (unlock func(), err error)
	// Read reads it; an error wrapping fs.ErrNotExist when netshift has written none yet.
	Read() (nodeconfig.File, error)
	// Write replaces it.
	Write(f nodeconfig.File) error
}
