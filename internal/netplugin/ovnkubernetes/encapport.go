package ovnkubernetes

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/ovsbridge"
	"netshift.io/netshift/internal/ovs"
)

// StepEncapPort sets options:dst_port on every Geneve Encap row of the
// southbound database the node's ovn-controller reads, which builds its
// tunnels from them. In a zone of the node's own, that database is the
// node's: the other nodes' rows in it are ovnkube-controller's, which never
// updates a row it made, so only this step moves them. In a shared zone,
// every node of the zone sets the same rows to the same port.
const StepEncapPort v1alpha1.StepAction = "SouthboundEncapPort"

// ovnRunDirs are where ovnkube puts the sockets of a node's own databases
// (ovn-remote unix:/var/run/ovn/ovnsb_db.sock).
var ovnRunDirs = []string{"/var/run/ovn", "/run/ovn"}

// southboundEndpoint is where the agent reaches the southbound database
// named by ovn-remote, the node's OVS setting, which ovnkube-node writes: a
// socket in the node's OVN run directory (seen by the agent at runDir), or a
// TCP endpoint. An SSL endpoint needs ovn-controller's certificate, which
// the agent does not hold, and is refused, as is more than one endpoint.
func southboundEndpoint(remote, runDir string) (string, error) {
	switch {
	case remote == "":
		return "", fmt.Errorf("the node's ovn-controller has no southbound database (external_ids:ovn-remote is empty)")
	case strings.Contains(remote, ","):
		return "", fmt.Errorf("ovn-remote %s names several southbound servers (a clustered database): netshift changes the Geneve port "+
			"in zones of one server (one zone per node, or a central zone on one server)", remote)
	case strings.HasPrefix(remote, "tcp:"):
		return remote, nil
	case strings.HasPrefix(remote, "unix:"):
		p := path.Clean(strings.TrimPrefix(remote, "unix:"))
		for _, d := range ovnRunDirs {
			if path.Dir(p) == d {
				return "unix:" + filepath.Join(runDir, path.Base(p)), nil
			}
		}
		return "", fmt.Errorf("ovn-remote %s: the agent reaches a node's own southbound database only in its OVN run directory %v (mounted at --ovn-rundir)", remote, ovnRunDirs)
	}
	return "", fmt.Errorf("ovn-remote %s: the agent reaches a southbound database at unix: or tcp: only (an ssl: one needs ovn-controller's certificate)", remote)
}

// southbound opens the southbound database of the node's ovn-controller;
// the caller closes it.
func (n *Node) southbound(ctx context.Context) (*ovs.Southbound, error) {
	if n.env.Switch == nil {
		return nil, fmt.Errorf("no Open vSwitch database to read the node's ovn-remote from (--ovsdb)")
	}
	remote, err := n.env.Switch.OpenvSwitchExternalID(ctx, "ovn-remote")
	if err != nil {
		return nil, fmt.Errorf("read the node's ovn-remote: %w", err)
	}
	runDir := n.env.OVNRunDir
	if runDir == "" {
		runDir = ovnRunDirs[0]
	}
	ep, err := southboundEndpoint(remote, runDir)
	if err != nil {
		return nil, err
	}
	return ovs.NewSouthbound(ep), nil
}

// checkEncapPort says what the step would change, or why it cannot: the
// database must answer and hold the zone's Geneve rows.
func (n *Node) checkEncapPort(ctx context.Context, plan *v1alpha1.LiveChangePlan, f *netplugin.Findings) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sb, err := n.southbound(ctx)
	if err != nil {
		f.Problems = append(f.Problems, "the Geneve port cannot change here: "+err.Error())
		return
	}
	defer sb.Close()
	rows, err := sb.GeneveEncaps(ctx)
	switch {
	case err != nil:
		f.Problems = append(f.Problems, "the Geneve port cannot change here: "+err.Error())
	case len(rows) == 0:
		f.Problems = append(f.Problems, fmt.Sprintf("the Geneve port cannot change here: %s has no Geneve Encap row (is ovn-controller running?)", sb.DB))
	default:
		f.WouldChange = append(f.WouldChange, fmt.Sprintf("%s: %d Geneve Encap rows (%d chassis): dst_port %d -> %d",
			sb.DB, len(rows), chassisCount(rows), plan.From, plan.To))
	}
}

func chassisCount(rows []ovs.Encap) int {
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Chassis] = true
	}
	return len(seen)
}

// armEncapPort connects to the database before the step's time; at it, one
// transaction sets the rows not yet at the port.
func (n *Node) armEncapPort(ctx context.Context, step v1alpha1.ScheduledStep) (netplugin.Armed, error) {
	sb, err := n.southbound(ctx)
	if err != nil {
		return netplugin.Armed{}, fmt.Errorf("node %s: %w", n.env.Node, err)
	}
	if _, err := sb.GeneveEncaps(ctx); err != nil { // connected, its cache filled
		sb.Close()
		return netplugin.Armed{}, fmt.Errorf("node %s: %w", n.env.Node, err)
	}
	port := int(step.Value)
	return netplugin.Armed{Release: sb.Close, Fire: func(ctx context.Context) (netplugin.Outcome, error) {
		var o netplugin.Outcome
		rows, err := sb.GeneveEncaps(ctx)
		if err != nil {
			return o, fmt.Errorf("node %s: %w", n.env.Node, err)
		}
		fix := ovsbridge.EncapsToFix(rows, port)
		if len(fix) == 0 {
			return o, nil
		}
		if o.Changed, err = sb.SetEncapPort(ctx, port, fix); err != nil {
			return o, fmt.Errorf("node %s: Geneve port %d in %s: %w", n.env.Node, port, sb.DB, err)
		}
		return o, nil
	}}, nil
}
