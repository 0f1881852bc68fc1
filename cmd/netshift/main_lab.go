//go:build lab

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

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

func init() { labCommands = append(labCommands, labRebootCmd) }

// labRebootCmd is the node-restore command of the lab's agents: it asks the
// lab to reboot this node (a file in the node's lab directory, which the lab
// watches) and waits to be ended by the reboot, as `systemctl reboot` is.
func labRebootCmd() *cobra.Command {
	var dir string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:    "lab-reboot",
		Short:  "Ask the lab to reboot this lab node, and wait for it (lab builds: the agents' node-restore action)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := filepath.Join(dir, "reboot")
			if err := os.WriteFile(req, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
				return fmt.Errorf("ask the lab to reboot the node: %w", err)
			}
			select {
			case <-cmd.Context().Done():
				return cmd.Context().Err()
			case <-time.After(wait):
				return fmt.Errorf("the lab did not reboot the node within %s (its request %s is unanswered)", wait, req)
			}
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "/run/netshift-lab", "the node's lab directory, which the lab watches")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the reboot")
	return cmd
}
