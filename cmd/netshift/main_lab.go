//go:build lab

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/labcni"
)

// A lab build is also the lab's stand-in network plugin: the lab installs
// this binary on each node as /opt/cni/bin/netshift-lab-cni.
func init() {
	if filepath.Base(os.Args[0]) == labcni.Name {
		labcni.Main()
		os.Exit(0)
	}
}

func init() { labCommands = append(labCommands, labCmd, demoCmd, labRebootCmd, labCallCmd) }

// labCallCmd is how a real lab node's netshift pods do what the cluster's
// network plugin does for them in the lab (an OVN zone move, the central
// zone's start and retirement): the lab runs the command on the machine and
// answers through the node's lab directory.
func labCallCmd(*globals) *cobra.Command {
	var dir string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:    "lab-call -- zone-move NODE ZONE | zone-central ensure|retire",
		Short:  "Ask the lab to run one of its zone commands for this node, and wait for it (lab builds: the zone commands of the operator and agents)",
		Args:   cobra.MinimumNArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := lab.PlaceCall(cmd.Context(), dir, args, wait)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), r.Output)
			if r.ExitCode != 0 {
				return fmt.Errorf("lab %s: exit code %d", strings.Join(args, " "), r.ExitCode)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "/run/netshift-lab", "the node's lab directory, which the lab watches")
	cmd.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the answer")
	return cmd
}

// labRebootCmd is the node-restore command of the lab's agents: it asks the
// lab to reboot this node (a file in the node's lab directory, which the lab
// watches) and waits to be ended by the reboot, as `systemctl reboot` is.
func labRebootCmd(*globals) *cobra.Command {
	var dir string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:    "lab-reboot",
		Short:  "Ask the lab to reboot this lab node, and wait for it (lab builds: the agents' node-restore action)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if why, err := os.ReadFile(filepath.Join(dir, lab.RebootFailsFile)); err == nil {
				return fmt.Errorf("the lab node's reboot failed: %s", strings.TrimSpace(string(why)))
			}
			if err := lab.RequestReboot(dir); err != nil {
				return fmt.Errorf("ask the lab to reboot the node: %w", err)
			}
			select {
			case <-cmd.Context().Done():
				return cmd.Context().Err()
			case <-time.After(wait):
				return fmt.Errorf("the lab did not reboot the node within %s (its request in %s is unanswered)", wait, dir)
			}
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "/run/netshift-lab", "the node's lab directory, which the lab watches")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the reboot")
	return cmd
}
