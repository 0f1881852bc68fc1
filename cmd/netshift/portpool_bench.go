//go:build lab

package main

import (
	"io"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/portpool/poolbench"
)

// The pools' benchmark is a lab build's: it creates its own control plane.
func init() { portpoolLabCommands = append(portpoolLabCommands, portpoolBenchCmd) }

func portpoolBenchCmd() *cobra.Command {
	var o poolbench.Options
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "bench --neutron-url URL",
		Short: "Measure pod port acquisition (warm pool deferred, warm pool synchronous, no pool) and Neutron requests per pod, against a real Neutron and a real API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.NeutronURL == "" {
				return usagef("--neutron-url: required (a no-auth Neutron endpoint the benchmark may create networks and ports in)")
			}
			if o.Pods < 10 || o.Pods > 100000 {
				return usagef("--pods: %d is out of range 10..100000", o.Pods)
			}
			if output == outputText {
				o.Progress = cmd.ErrOrStderr()
			}
			r, err := poolbench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			return output.write(cmd.OutOrStdout(), r, func(w io.Writer) error {
				poolbench.WriteText(w, r)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&o.NeutronURL, "neutron-url", "", "the Neutron endpoint (no auth)")
	cmd.Flags().IntVar(&o.Pods, "pods", 200, "pods per measurement (10..100000)")
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}
