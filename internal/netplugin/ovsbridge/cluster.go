package ovsbridge

import (
	"context"
	"sort"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/zones"
)

// Name is the driver's name, as --network-plugin takes it.
const Name = "ovs-bridge"

// Cluster is the driver in the operator.
type Cluster struct {
	// Southbound is the OVN southbound database, when OVN runs the bridge
	// (nil otherwise): ovn-controller builds every node's Geneve tunnels from
	// its Encap rows, so a Geneve port is set there, not on the nodes.
	Southbound *ovs.Southbound
}

var _ netplugin.Cluster = (*Cluster)(nil)

// Name is "ovs-bridge".
func (c *Cluster) Name() string { return Name }

// Steps: an MTU goes through the pods' eth0, their veths' node ends, then
// the node's own ports on br-int; a tunnel port is one OVSDB transaction,
// unless the southbound database holds it.
func (c *Cluster) Steps(kind v1alpha1.ChangeKind, _ v1alpha1.Encapsulation) livechange.NodeSteps {
	s := livechange.NodeSteps{Path: []v1alpha1.StepAction{netplugin.StepPodMTU, netplugin.StepHostVethMTU, netplugin.StepNodePortMTU}}
	if c.TunnelPortRecord(kind) == nil {
		s.Tunnel = []v1alpha1.StepAction{netplugin.StepTunnelPort}
	}
	return s
}

// TunnelPortRecord is the southbound Encap rows for a Geneve port in the OVN mode.
func (c *Cluster) TunnelPortRecord(kind v1alpha1.ChangeKind) netplugin.TunnelPortRecord {
	if kind != v1alpha1.ChangeGenevePort || c.Southbound == nil {
		return nil
	}
	return EncapRecord{SB: c.Southbound}
}

// Zones are named as OVN-Kubernetes names them: its namespace, its per-node
// pods, and a central Deployment of the databases (the lab's stand-in plays
// them).
func (c *Cluster) Zones() *netplugin.Zones {
	return &netplugin.Zones{Namespace: "ovn-kubernetes", NodePods: "app=ovnkube-node", Central: "ovnkube-central", LeftCentral: leftCentral}
}

// Follow has nothing to do: the plugin's new pods are set up from the node's
// network configuration, which the NetworkConfig step rewrote, and its tunnels
// from the OVSDB rows (or the southbound Encap rows) the change set.
func (c *Cluster) Follow(context.Context, v1alpha1.AppliedNetwork) (string, error) { return "", nil }

// leftCentral: the node annotations OVN-Kubernetes leaves on a node that
// left the central zone (netplugin.Zones), which the stand-in plays too.
var leftCentral = []string{zones.RemoteZoneMigrated}

// EncapRecord is OVN's southbound Encap rows of type geneve.
type EncapRecord struct{ SB *ovs.Southbound }

// Set writes port into every Geneve Encap row.
func (e EncapRecord) Set(ctx context.Context, port int) error {
	_, err := e.SB.SetEncapPort(ctx, port, nil)
	return err
}

// Keep sets port on the Geneve Encap rows that lack it: a chassis that
// registers again (a new node, ovn-controller recreating its Chassis row)
// comes without it.
func (e EncapRecord) Keep(ctx context.Context, port int) (int, error) {
	records, err := e.SB.GeneveEncaps(ctx)
	if err != nil {
		return 0, err
	}
	fix := EncapsToFix(records, port)
	if len(fix) == 0 {
		return 0, nil
	}
	return e.SB.SetEncapPort(ctx, port, fix)
}

// EncapsToFix are the records whose port is not the wanted one, in UUID
// order; for the default port, also those that name it (the default names no
// port).
func EncapsToFix(records []ovs.Encap, port int) []string {
	var fix []string
	for _, r := range records {
		have := r.DstPort
		if have == 0 {
			have = ovs.DefaultGenevePort
		}
		if have != port || (port == ovs.DefaultGenevePort && r.DstPort != 0) {
			fix = append(fix, r.UUID)
		}
	}
	sort.Strings(fix)
	return fix
}
