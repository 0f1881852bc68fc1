//go:build lab

package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/scale"
)

func scaleCmd(_ *globals) *cobra.Command {
	o := scale.Options{Nodes: 100, Run: scale.RunMTU, PodsPerNode: 10, Pools: 10, WorkTime: time.Second, Timeout: 15 * time.Minute}
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Measure netshift on a cluster of simulated nodes: a live MTU change, a tunnel-port change or a drain of node pools",
		Long: `Starts a real kube-apiserver, etcd, kube-controller-manager and kube-scheduler,
kwok (hack/kwok-assets.sh) keeping --nodes simulated Nodes and their pods alive,
the real operator (this binary's operator command, a process of its own) and one
real agent per node in this process, each with its own client and watches, over
a simulated data plane whose operations take the time the lab measured. Runs one
scenario, prints what it cost (time, API requests per node by verb, CPU and
memory of the operator, the API server, etcd and the agents) and takes it all
down.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return asUsage(err)
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			o.Netshift = bin
			o.Out = cmd.ErrOrStderr()
			r, err := scale.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if err := output.write(cmd.OutOrStdout(), r, func(w io.Writer) error { r.WriteText(w); return nil }); err != nil {
				return err
			}
			if problem := r.Problem(); problem != "" {
				return fmt.Errorf("scale: %s", problem)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "simulated nodes (10..10000)")
	f.StringVar(&o.Run, "run", o.Run, "scenario: mtu (a live MTU change), port (a live VXLAN port change) or drain (a drain of every node under --pools pools)")
	f.Float64Var(&o.FailPercent, "fail-percent", 0, "percent of the nodes whose first step fails (0..10; live changes)")
	f.Float64Var(&o.SilentPercent, "silent-percent", 0, "percent of the nodes whose agent stops once it answered the preconditions (0..10; live changes)")
	f.IntVar(&o.PodsPerNode, "pods-per-node", o.PodsPerNode, "pods on each node for the drain (0..100)")
	f.IntVar(&o.Pools, "pools", o.Pools, "node pools for the drain (1..100), of mixed priorities, each maxParallel 10%")
	f.DurationVar(&o.WorkTime, "work-time", o.WorkTime, "how long each node's reconfiguration takes once drained (0s..1m; drain)")
	f.DurationVar(&o.AgentWriteSpacing, "agent-write-spacing", 0, "the operator's --agent-write-spacing (1ms..100ms; 0: its default, 6ms; live changes)")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long the scenario may take")
	f.StringVar(&o.Dir, "dir", "", "keep the run's files (the processes' and the agents' logs, etcd's data) in this new directory instead of removing them")
	addOutputFlag(f, &output)
	return cmd
}
