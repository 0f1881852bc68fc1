package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/lab"
)

func labZoneMoveCmd(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "zone-move NODE ZONE",
		Short: "Move a node of an OVN lab into a zone (\"global\" or its own name); the agents' --zone-move-command",
		Long: `Moves the node's ovn-controller, its switch and its pods' ports into the zone, in the order that
keeps traffic flowing (the new zone prepared first, the switch never in two zones, the old chassis
removed only once the node is connected to the new southbound database), and returns once the
node's first pod reaches a pod on every other node. Idempotent.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			return s.MoveZone(cmd.Context(), args[0], args[1], func(f string, a ...any) { fmt.Fprintf(cmd.OutOrStdout(), f+"\n", a...) })
		},
	}
}

func labZoneCentralCmd(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "zone-central ensure|retire",
		Short: "Start or retire the central zone of an OVN lab (the operator's --zone-central-*-command)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			switch args[0] {
			case "ensure":
				return s.CentralEnsure(cmd.Context())
			case "retire":
				return s.CentralRetire(cmd.Context())
			}
			return fmt.Errorf("zone-central: %q is not ensure or retire", args[0])
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
