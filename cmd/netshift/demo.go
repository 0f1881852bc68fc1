//go:build lab

package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/demo"
)

func demoCmd(_ *globals) *cobra.Command {
	o := demo.Options{Hold: 3 * time.Second}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the parallel drain example on a local real API server and show it in netshift status",
		Long: `Starts a real kube-apiserver and etcd (built by hack/envtest-assets.sh), the
operator and one agent per node as separate processes, creates five nodes a..e
with two pods each, pool1 {a,b,c} (priority 1, maxParallel 1) and pool2
{c,d,e} (priority 99, maxParallel 2), then reconfigures c,d,e and then every
node, printing netshift status as the drains roll.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Hold < 0 || o.Hold > time.Minute {
				return usagef("--hold: %s is outside 0s..1m", o.Hold)
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			o.Binary, o.Out = bin, cmd.OutOrStdout()
			return demo.RunDrain(cmd.Context(), o)
		},
	}
	cmd.Flags().DurationVar(&o.Hold, "hold", o.Hold, "how long each node's work takes (0s..1m)")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the API server and processes running afterwards, until Ctrl-C")
	return cmd
}
