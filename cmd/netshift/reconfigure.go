package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/operator"
)

func reconfigureCmd(g *globals) *cobra.Command {
	var nodes, reason, id string
	var all bool
	cmd := &cobra.Command{
		Use:   "reconfigure",
		Short: "Drain nodes under their pools' limits, re-apply netshift's configuration, and return them to service",
		Example: `  netshift reconfigure --nodes c,d,e --reason "new NIC firmware"
  netshift reconfigure --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all == (nodes != "") {
				return fmt.Errorf("give either --nodes or --all")
			}
			var targets []string
			for _, n := range strings.Split(nodes, ",") {
				if n = strings.TrimSpace(n); n != "" {
					targets = append(targets, n)
				}
			}
			if !all && len(targets) == 0 {
				return fmt.Errorf("--nodes: %q names no node (give comma-separated node names)", nodes)
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
			if id == "" {
				id = "reconfigure-" + time.Now().UTC().Format("20060102-150405")
			}
			now := metav1.Now()
			op := v1alpha1.NodeOperation{ID: id, Kind: v1alpha1.OperationReconfigure, Reason: reason, RequestedAt: &now}
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
	f.StringVar(&id, "id", "", "operation ID (default: reconfigure-<UTC time>)")
	return cmd
}
