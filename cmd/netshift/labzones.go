//go:build lab

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/lab"
)

func labZoneMoveCmd(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "zone-move NODE ZONE",
		Short: "Move a node of an OVN lab into a zone (\"global\" or its own name); what the lab's ovnkube-node stand-in pods have the lab run",
		Long: `Moves the node's ovn-controller, its switch and its pods' ports into the zone, in the order that
keeps traffic flowing (the new zone prepared first, the switch never in two zones, the old chassis
removed only once the node is connected to the new southbound database), and returns once every
other zone's ovn-ic has bound the zone's transit port to its gateway (an ovn-ic that has not within
3 s is started again, and says so) and the node's first pod reaches a pod on every other node.
Idempotent.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			return s.Interconnect().MoveZone(cmd.Context(), args[0], args[1], func(f string, a ...any) { fmt.Fprintf(cmd.OutOrStdout(), f+"\n", a...) })
		},
	}
}

func labZoneCentralCmd(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "zone-central ensure|retire",
		Short: "Start or retire the central zone of an OVN lab; what the lab's ovnkube-central stand-in pod has the lab run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			switch args[0] {
			case "ensure":
				return s.Interconnect().CentralEnsure(cmd.Context())
			case "retire":
				return s.Interconnect().CentralRetire(cmd.Context())
			}
			return usagef("zone-central: %q is not ensure or retire", args[0])
		},
	}
}

func labUpgradeZonesCmd(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "upgrade-zones",
		Short: "Turn on the operator's zone controller in a legacy OVN lab (it then moves the lab to multizone through single zone)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.UpgradeZones(*name)
		},
	}
}

func labZoneBenchCmd(name *string) *cobra.Command {
	var output outputFormat
	var direct bool
	return func() *cobra.Command {
		cmd := &cobra.Command{
			Use:   "zone-bench",
			Short: "Move a single-zone OVN lab to multizone and back node by node, with the probe around each move, and print each move's figures",
			Long: `Starts from a single-zone OVN lab (netshift lab up --ovn, or --ovn-kubernetes DIR --zones single,
where the central zone is ovnkube-master): moves each node into its own zone (name
order), retires the central zone, starts it again and moves each node back, with the traffic probe
running around each step alone. Each step goes through the network plugin's objects, as netshift's
operator takes it: the node's k8s.ovn.org/zone-name label set and its plugin pod deleted, done once
the new pod has annotated the node; the central zone's Deployment scaled to 0 and back. The operator
is scaled to 0 meanwhile and restored at the end. With --direct the same steps are first run by the
lab alone (its zone move and central commands, without the pod restart), measured beside them
(the lab's own OVN only). The probe runs on 700 ms after each step (10 s on OVN-Kubernetes, whose
moved node's connections come back at TCP's next retransmission).
Prints, per step, how long it took, the longest silence of the long-lived connections with an end
on the moving node and of the others, broken connections and failed requests. Targets: moving
node's connections under 500 ms, the others under 100 ms, nothing broken. Leaves the lab as it
found it.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				rep, err := lab.ZoneBench(cmd.Context(), *name, direct, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				return output.write(cmd.OutOrStdout(), rep, func(w io.Writer) error {
					writeZoneBenchText(w, rep)
					return nil
				})
			},
		}
		addOutputFlag(cmd.Flags(), &output)
		cmd.Flags().BoolVar(&direct, "direct", false, "first run the same steps by the lab alone (no plugin pod restart) and report them beside")
		return cmd
	}()
}

// writeZoneBenchText is `lab zone-bench` for people.
func writeZoneBenchText(w io.Writer, rep lab.ZoneBenchReport) {
	if rep.Direct != nil {
		fmt.Fprintf(w, "the lab's moves alone: longest gap of a moving node's connection %.1f ms, of the others %.1f ms; broken %d, failed requests %d\n",
			rep.Direct.MaxMovingGapMs, rep.Direct.MaxOthersGapMs, rep.Direct.Broken, rep.Direct.Failures)
	}
	fmt.Fprintf(w, "node moves through the plugin's objects: longest gap of a moving node's connection %.1f ms (target < 500), of the others %.1f ms (target < 100); broken %d, failed requests %d\n",
		rep.MaxMovingGapMs, rep.MaxOthersGapMs, rep.Broken, rep.Failures)
}
