package netplugin

import (
	"context"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// Cluster is a network plugin's driver in the operator.
type Cluster interface {
	// Name is the driver's name, as --network-plugin takes it.
	Name() string
	// Steps are the node steps of a change of kind, on a cluster whose tunnels
	// use encap. The core orders and times them.
	Steps(kind v1alpha1.ChangeKind, encap v1alpha1.Encapsulation) livechange.NodeSteps
	// TunnelPortRecord is where the cluster, rather than each node, holds the
	// tunnel port a change of kind changes (OVN's southbound Encap rows, which
	// ovn-controller builds every node's tunnels from); nil when the nodes hold it.
	TunnelPortRecord(kind v1alpha1.ChangeKind) TunnelPortRecord
	// Zones names the plugin's objects a zone move goes through; nil for a
	// plugin without zones, on whose clusters the zone controller does not run.
	Zones() *Zones
	// Follow makes the plugin's own configuration carry the applied network,
	// so that its pods, restarted, keep it instead of putting the old values
	// back, and restarts them when that changed anything. It says what it did
	// ("" when nothing needed doing). The operator calls it with no change
	// under way.
	Follow(ctx context.Context, applied v1alpha1.AppliedNetwork) (string, error)
}

// TunnelPortRecord is a cluster-wide record of the tunnel port. The operator
// sets it at T0, sets it back in a rollback, and keeps it set between changes.
type TunnelPortRecord interface {
	// Set writes port into every record.
	Set(ctx context.Context, port int) error
	// Keep writes port into the records that lost it (a chassis registered
	// again) and says how many it fixed.
	Keep(ctx context.Context, port int) (fixed int, err error)
}

// Zones are the plugin objects a move between OVN interconnect layouts acts
// on: the defaults of the operator's --zone-plugin-* flags.
type Zones struct {
	// Namespace is the plugin's namespace.
	Namespace string
	// NodePods is the label selector of its per-node DaemonSet's pods.
	NodePods string
	// Central is the Deployment of its central side (databases, northd).
	Central string
	// Interconnect turns the plugin's interconnect on; nil for a plugin
	// whose pods always run with it.
	Interconnect Interconnect
	// LeftCentral are the node annotations the plugin sets (valued with the
	// new zone) when a node leaves the central zone, and never removes: the
	// central zone lets the node go when they appear, and does not take it
	// back while they stay. A move sets or removes them as soon as the node's
	// new plugin pod has annotated it in its zone (zones.FollowZone).
	LeftCentral []string
}

// Interconnect is a plugin's switch between its legacy layout (no
// interconnect: one central zone that knows nothing of zones) and its
// interconnect layouts, single zone and multizone.
type Interconnect interface {
	// On says whether the plugin's workloads have interconnect on, and what
	// of them is still restarting (whatever the reason: interconnect turned
	// on, a restart that follows a live change, a node's move) so that
	// nothing else moves until they run.
	On(ctx context.Context) (on bool, restarting string, err error)
	// Enable turns interconnect on in the plugin's own objects and restarts
	// its pods with it; called again while they restart, it changes nothing.
	Enable(ctx context.Context) (string, error)
}
