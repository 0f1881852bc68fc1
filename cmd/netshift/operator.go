package main

import (
	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/operator"
)

func operatorCmd(g *globals) *cobra.Command {
	o := operator.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: the drain controller and every netshift controller (leader-elected)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			mgr, err := operator.NewManager(cmd.Context(), cfg, o)
			if err != nil {
				return err
			}
			return mgr.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "elect one leader among operator replicas; only the leader decides")
	f.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "namespace of the leader election Lease")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus metrics endpoint (\"0\" disables it)")
	f.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of /healthz and /readyz (\"0\" disables it)")
	f.DurationVar(&o.EvictionRetry, "eviction-retry", o.EvictionRetry, "how often blocked evictions are retried")
	return cmd
}
