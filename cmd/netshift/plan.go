package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/plan"
)

func planCmd(g *globals) *cobra.Command {
	var nodesFile, poolsFile, only string
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show which pool owns each node and the waves in which nodes would be configured",
		Long: `Shows which pool owns each node and the waves in which the nodes that need
configuration would go if they all asked at once and took equal time. Reads
Nodes and NetshiftNodePools from files (a YAML or JSON array, a List, or multi-document
YAML) or, without files, from the cluster.`,
		Example: "  netshift plan --nodes config/samples/example-nodes.yaml --pools config/samples/example-pools.yaml --only c,d,e",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (nodesFile == "") != (poolsFile == "") {
				return usagef("--nodes and --pools go together (or neither, to read the cluster)")
			}
			var nodes []corev1.Node
			var pools []v1alpha1.NetshiftNodePool
			var err error
			if nodesFile != "" {
				if nodes, err = plan.LoadNodes(nodesFile); err != nil {
					return usagef("--nodes: %w", err)
				}
				if pools, err = plan.LoadPools(poolsFile); err != nil {
					return usagef("--pools: %w", err)
				}
			} else {
				c, err := g.client()
				if err != nil {
					return err
				}
				var nl corev1.NodeList
				var pl v1alpha1.NetshiftNodePoolList
				if err := c.List(cmd.Context(), &nl); err != nil {
					return fmt.Errorf("list nodes: %w", err)
				}
				if err := c.List(cmd.Context(), &pl); err != nil {
					return fmt.Errorf("list NetshiftNodePools: %w", err)
				}
				nodes, pools = nl.Items, pl.Items
			}
			var onlyNodes []string
			for _, n := range strings.Split(only, ",") {
				if n = strings.TrimSpace(n); n != "" {
					onlyNodes = append(onlyNodes, n)
				}
			}
			p, err := plan.Compute(nodes, pools, onlyNodes)
			if err != nil {
				return asUsage(err) // --only names an unknown node, or a pool's spec is unusable
			}
			return output.write(cmd.OutOrStdout(), p, p.WriteText)
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodesFile, "nodes", "", "file of Node objects")
	f.StringVar(&poolsFile, "pools", "", "file of NetshiftNodePool objects")
	f.StringVar(&only, "only", "", "comma-separated nodes that need configuration (default: every node)")
	addOutputFlag(f, &output)
	return cmd
}
