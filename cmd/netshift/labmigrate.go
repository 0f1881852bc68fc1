//go:build lab

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/lab"
)

func labMigrateCmd(name *string) *cobra.Command {
	var output outputFormat
	o := lab.MigrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Live-migrate a VM between node-1 and node-2 of an OVN lab, per-port and direct plugging side by side",
		Long: `Moves a "VM" (a namespace on the lab's VM switch ls-vm with a fixed MAC and IP, exchanging
numbered UDP datagrams with a peer on node-3 every --interval) from node-1 to node-2 and back,
--count times each way per plug mode, alternating per-port and direct plugging. Each migration
plugs the target pod's port ahead, pauses the VM, removes its source tap, waits --pause, makes
its target tap appear, sends the hypervisor's RARP announcements and resumes it. Prints, per
mode, the datagrams never answered (at the resume, and at the completion, when OVN moves the port
to the target alone) and the longest time the VM's traffic stood still. The lab must be an OVN
lab of at least 3 nodes; progress goes to standard error. Every node's ovs-vswitchd, which in the
lab is the data path itself, runs at --datapath-nice for the run, as a real node's kernel datapath
forwards ahead of every process.`,
		Example: `  netshift lab up --ovn && netshift lab migrate --count 10 -o json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return asUsage(err)
			}
			o.Progress = cmd.ErrOrStderr()
			rep, err := lab.Migrate(cmd.Context(), *name, o)
			if err != nil {
				return err
			}
			return output.write(cmd.OutOrStdout(), rep, func(w io.Writer) error {
				writeMigrateText(w, rep)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Count, "count", 10, "migrations each way per plug mode (1..100)")
	f.DurationVar(&o.Pause, "pause", 20*time.Millisecond, "how long the VM is gone between its source tap going and its target tap appearing (same in both modes)")
	f.DurationVar(&o.Interval, "interval", 2*time.Millisecond, "time between the VM's datagrams")
	f.IntVar(&o.DatapathNice, "datapath-nice", -10, "niceness of every node's ovs-vswitchd, the lab's data path, during the run (-20..0; 0 leaves the lab's own): a real node's kernel datapath forwards ahead of every process")
	addOutputFlag(f, &output)
	return cmd
}

func writeMigrateText(w io.Writer, r lab.MigrateReport) {
	fmt.Fprintf(w, "VM migrations between node-1 and node-2, peer on node-3, a datagram every %.0f ms, pause %.0f ms, ovs-vswitchd at nice %d; hand-over: from the source pod's deletion to the port bound on the target alone\n", r.IntervalMs, r.PauseMs, r.DatapathNice)
	fmt.Fprintf(w, "%-10s %10s %6s %15s %10s %14s %8s %14s %24s\n", "plugging", "migrations", "lost", "before resume", "at resume", "at completion", "sent", "longest gap", "hand-over p50 / max")
	for _, row := range []struct {
		name string
		f    lab.MigrationFigures
	}{{"per-port", r.PerPort}, {"direct", r.Direct}} {
		fmt.Fprintf(w, "%-10s %10d %6d %15d %10d %14d %8d %11.1f ms %12.0f / %5.0f ms\n", row.name, row.f.Migrations, row.f.Lost, row.f.LostBeforeResume, row.f.LostAtResume, row.f.LostAtCompletion,
			row.f.Sent, row.f.MaxGapMs, row.f.HandOverMsP50, row.f.HandOverMsMax)
	}
	if !r.PerPort.Realtime || !r.Direct.Realtime {
		fmt.Fprintln(w, "the traffic was not carried by a real-time thread throughout: the gaps include the lab's own waits for a processor")
	}
}
