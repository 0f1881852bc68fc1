//go:build lab

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/portpool/poolbench"
)

// The pools' benchmark is a lab build's: it creates its own control plane.
func init() { portpoolLabCommands = append(portpoolLabCommands, portpoolBenchCmd) }

func portpoolBenchCmd() *cobra.Command {
	var o poolbench.Options
	output := "text"
	cmd := &cobra.Command{
		Use:   "bench --neutron-url URL",
		Short: "Measure pod port acquisition (warm pool deferred, warm pool synchronous, no pool) and Neutron requests per pod, against a real Neutron and a real API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if o.NeutronURL == "" {
				return errors.New("--neutron-url: required (a no-auth Neutron endpoint the benchmark may create networks and ports in)")
			}
			if o.Pods < 10 || o.Pods > 100000 {
				return fmt.Errorf("--pods: %d is out of range 10..100000", o.Pods)
			}
			if output == "text" {
				o.Progress = cmd.ErrOrStderr()
			}
			r, err := poolbench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			poolbench.WriteText(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.NeutronURL, "neutron-url", "", "the Neutron endpoint (no auth)")
	cmd.Flags().IntVar(&o.Pods, "pods", 200, "pods per measurement (10..100000)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
