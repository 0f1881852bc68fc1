//go:build lab

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/vm"
)

func labMigrateCmd(name *string) *cobra.Command {
	var output outputFormat
	o := lab.MigrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Live-migrate a VM between node-1 and node-2 of an OVN lab, per-port and direct plugging side by side",
		Long: `Moves a VM on the lab's VM switch ls-vm (a fixed MAC and IP, exchanging numbered UDP datagrams
with a peer on node-3 every --interval) from node-1 to node-2 and back, --count times each way per
plug mode, alternating per-port and direct plugging. Each migration creates the target pod (the
same port) and defines the target VM, waits for netshift to report the target ready, migrates,
then deletes the source pod and waits until OVN has the port on the target alone.

--vm netns (the default, fast): the VM is a namespace whose traffic thread is its CPU; the lab
pauses it, removes its source tap, waits --pause, makes its target tap appear, sends the RARP
announcements a hypervisor sends and resumes it. --vm qemu: a real guest (Debian's kernel, busybox
and the lab's own answering program) under QEMU in each node's namespace, its tap made when the VM
is defined, migrated by QMP over the underlay with --downtime-limit; QEMU stops, resumes and
announces it, and the peer sends while the guest answers. The guest's own warm-up after a resume
is measured first, migrating it twice between two QEMUs on one Linux bridge.

Prints, per mode, the datagrams never answered (while the target was prepared, while the VM was
stopped, at the resume, and at the completion, when OVN moves the port to the target alone), the
longest time the traffic stood still, and with QEMU its own downtime. The lab must be an OVN lab
of at least 3 nodes; progress goes to standard error. Every node's ovs-vswitchd, which in the lab
is the data path itself, runs at --datapath-nice for the run, as a real node's kernel datapath
forwards ahead of every process.`,
		Example: `  netshift lab up --ovn && netshift lab migrate --count 10 -o json
  netshift lab migrate --vm qemu --count 10 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return asUsage(err)
			}
			o.Progress = cmd.ErrOrStderr()
			if o.VM == lab.VMQEMU && !cmd.Flags().Changed("interval") {
				o.Interval = vm.GuestInterval
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			o.Binaries = filepath.Dir(bin)
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
	f.StringVar(&o.VM, "vm", lab.VMNetns, "what migrates: netns (the lab's namespace VM) or qemu (a real guest under QEMU)")
	f.IntVar(&o.Count, "count", 10, "migrations each way per plug mode (1..100)")
	f.DurationVar(&o.Pause, "pause", 20*time.Millisecond, "--vm netns: how long the VM is gone between its source tap going and its target tap appearing (same in both modes)")
	f.DurationVar(&o.DowntimeLimit, "downtime-limit", 50*time.Millisecond, "--vm qemu: the longest stop QEMU may choose for a migration's last copy (0..2s)")
	f.DurationVar(&o.Interval, "interval", 2*time.Millisecond, "time between the measured datagrams (--vm qemu: 20ms unless given: a guest under TCG cannot answer 500 a second while it migrates)")
	f.IntVar(&o.DatapathNice, "datapath-nice", -10, "niceness of every node's ovs-vswitchd, the lab's data path, during the run (-20..0; 0 leaves the lab's own): a real node's kernel datapath forwards ahead of every process")
	addOutputFlag(f, &output)
	return cmd
}

func writeMigrateText(w io.Writer, r lab.MigrateReport) {
	how := fmt.Sprintf("pause %.0f ms", r.PauseMs)
	if r.VM == lab.VMQEMU {
		how = fmt.Sprintf("QEMU, downtime limit %.0f ms", r.DowntimeLimitMs)
	}
	fmt.Fprintf(w, "VM (%s) migrations between node-1 and node-2, peer on node-3, a datagram every %.0f ms, %s, ovs-vswitchd at nice %d; hand-over: from the source pod's deletion to the port bound on the target alone\n",
		r.VM, r.IntervalMs, how, r.DatapathNice)
	fmt.Fprintf(w, "%-10s %10s %6s %9s %13s %10s %14s %8s %14s %24s %22s\n", "plugging", "migrations", "lost", "prepared", "while stopped", "at resume", "at completion",
		"sent", "longest gap", "hand-over p50 / max", "downtime p50 / max")
	for _, row := range []struct {
		name string
		f    lab.MigrationFigures
	}{{"per-port", r.PerPort}, {"direct", r.Direct}} {
		fmt.Fprintf(w, "%-10s %10d %6d %9d %13d %10d %14d %8d %11.1f ms %12.0f / %5.0f ms %10.0f / %5.0f ms\n", row.name, row.f.Migrations, row.f.Lost,
			row.f.LostBeforeResume, row.f.LostWhileStopped, row.f.LostAtResume, row.f.LostAtCompletion,
			row.f.Sent, row.f.MaxGapMs, row.f.HandOverMsP50, row.f.HandOverMsMax, row.f.DowntimeMsP50, row.f.DowntimeMsMax)
	}
	for _, row := range []struct {
		name string
		f    lab.MigrationFigures
	}{{"per-port", r.PerPort}, {"direct", r.Direct}} {
		for _, c := range row.f.GuestCrashes {
			fmt.Fprintf(w, "%s round %d, %s -> %s: the guest crashed after its resume (QEMU under TCG), its round not counted: %s\n", row.name, c.Round, c.From, c.To, c.Why)
		}
	}
	if g := r.GuestWarmup; g != nil {
		fmt.Fprintf(w, "the guest alone (two QEMUs on one Linux bridge): booted in %.1f s, %d migrations, longest gap after a resume %.1f ms (its own warm-up), %d lost after a resume\n",
			g.BootSeconds, g.Migrations, g.ResumeGapMs, g.LostResumed)
	}
	if !r.PerPort.Realtime || !r.Direct.Realtime {
		fmt.Fprintln(w, "the traffic was not carried by a real-time thread throughout: the gaps include the lab's own waits for a processor")
	}
}
