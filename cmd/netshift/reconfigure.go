package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/operator"
)

func reconfigureCmd(g *globals) *cobra.Command {
	var nodes, reason, id string
	var all, reboot bool
	cmd := &cobra.Command{
		Use:   "reconfigure",
		Short: "Drain nodes under their pools' limits, re-apply netshift's configuration (or reboot them into it), and return them to service",
		Example: `  netshift reconfigure --nodes c,d,e --reason "new NIC firmware"
  netshift reconfigure --all
  netshift reconfigure --reboot --nodes node-1 --reason "left behind by a failed live change"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all == (nodes != "") {
				return usagef("give either --nodes or --all")
			}
			var targets []string
			for _, n := range strings.Split(nodes, ",") {
				if n = strings.TrimSpace(n); n != "" {
					targets = append(targets, n)
				}
			}
			if !all && len(targets) == 0 {
				return usagef("--nodes: %q names no node (give comma-separated node names)", nodes)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if all {
				var nl corev1.NodeList
				if err := c.List(ctx, &nl); err != nil {
					return fmt.Errorf("list nodes: %w", err)
				}
				for _, n := range nl.Items {
					targets = append(targets, n.Name)
				}
			}
			kind := v1alpha1.OperationReconfigure
			var network *v1alpha1.NodeNetworkConfig
			if reboot {
				kind = v1alpha1.OperationReboot
				if network, err = appliedNetwork(ctx, c); err != nil {
					return err
				}
			}
			if id == "" {
				id = strings.ToLower(string(kind)) + "-" + time.Now().UTC().Format("20060102-150405")
			}
			now := metav1.Now()
			op := v1alpha1.NodeOperation{ID: id, Kind: kind, Reason: reason, RequestedAt: &now, Network: network}
			if err := operator.StartOperation(ctx, c, op, targets); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "operation %s started on %d nodes: %s\nfollow it with: netshift status -w 1s\n", id, len(targets), strings.Join(targets, ", "))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodes, "nodes", "", "comma-separated node names")
	f.BoolVar(&all, "all", false, "every node")
	f.StringVar(&reason, "reason", "", "why, recorded with the operation")
	f.BoolVar(&reboot, "reboot", false, "reboot the nodes into the network the cluster carries (NetshiftNetwork status.applied) once each is drained, and check them when they are back")
	f.StringVar(&id, "id", "", "operation ID (default: reconfigure-<UTC time>, or reboot-<UTC time>)")
	return cmd
}

// appliedNetwork is the network the cluster carries: what a rebooted node
// comes back with.
func appliedNetwork(ctx context.Context, c client.Client) (*v1alpha1.NodeNetworkConfig, error) {
	var cn v1alpha1.NetshiftNetwork
	if err := c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
		return nil, fmt.Errorf("--reboot: read NetshiftNetwork %s for the network to reboot into: %w", v1alpha1.NetshiftNetworkName, err)
	}
	if cn.Status.Applied == nil {
		return nil, fmt.Errorf("--reboot: NetshiftNetwork %s has no status.applied yet (is the operator running?)", v1alpha1.NetshiftNetworkName)
	}
	network := livechange.NodeConfig(*cn.Status.Applied, livechange.FromSpec(cn.Spec).Encapsulation)
	return &network, nil
}
