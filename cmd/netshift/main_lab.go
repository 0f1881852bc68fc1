//go:build lab

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/labcni"
	"netshift.io/netshift/internal/lab/standin"
	"netshift.io/netshift/internal/ovs/ovsdist"
	"netshift.io/netshift/internal/scheme"
)

// A lab build is also the lab's stand-in network plugin: the lab installs
// this binary on each node as /opt/cni/bin/netshift-lab-cni.
func init() {
	// Every program the lab starts runs the lab's Open vSwitch and OVN; where
	// they are not unpacked, `lab up` says so (lab.Requirements).
	_, _ = ovsdist.Use()
	if filepath.Base(os.Args[0]) == labcni.Name {
		labcni.Main()
		os.Exit(0)
	}
}

func init() {
	labCommands = append(labCommands, labCmd, demoCmd, labRebootCmd, labCallCmd, labPluginCmd, scaleCmd)
}

// labPluginCmd is the lab's stand-in for the OVN network plugin's pods
// (ovnkube): the node DaemonSet's pod, which moves its node into the zone of
// its k8s.ovn.org/zone-name label and annotates it, and the central
// Deployment's pod, which starts the central zone and retires it when stopped.
func labPluginCmd(g *globals) *cobra.Command {
	var dir, node string
	cmd := &cobra.Command{
		Use:    "lab-plugin node --node NODE | central",
		Short:  "The lab's stand-in for the OVN network plugin's pods (lab builds)",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			switch args[0] {
			case "node":
				if node == "" {
					return usagef("lab-plugin node: --node is required")
				}
				cfg, err := g.restConfig()
				if err != nil {
					return err
				}
				c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
				if err != nil {
					return err
				}
				return standin.Node(ctx, c, node, dir, cmd.OutOrStdout())
			case "central":
				return standin.Central(ctx, dir, cmd.OutOrStdout())
			}
			return usagef("lab-plugin: %q is not node or central", args[0])
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "/run/netshift-lab", "the node's lab directory, which the lab watches")
	cmd.Flags().StringVar(&node, "node", "", "the node this pod runs on")
	return cmd
}

// labCallCmd asks the lab to run one of its zone commands from a real lab
// node (an OVN zone move, the central zone's start and retirement): the lab
// runs the command on the machine and answers through the node's lab
// directory. The lab's network plugin stand-in pods call the lab the same way.
func labCallCmd(*globals) *cobra.Command {
	var dir string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:    "lab-call -- zone-move NODE ZONE | zone-central ensure|retire",
		Short:  "Ask the lab to run one of its zone commands for this node, and wait for it (lab builds)",
		Args:   cobra.MinimumNArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return standin.Ask(cmd.Context(), dir, cmd.OutOrStdout(), wait, args...)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "/run/netshift-lab", "the node's lab directory, which the lab watches")
	cmd.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the answer")
	return cmd
}

// labRebootCmd is the reboot command of the lab's agents: it asks the
// lab to reboot this node (a file in the node's lab directory, which the lab
// watches) and waits to be ended by the reboot, as every process of a
// rebooting machine is.
func labRebootCmd(*globals) *cobra.Command {
	var dir string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:    "lab-reboot",
		Short:  "Ask the lab to reboot this lab node, and wait for it (lab builds: the agents' --reboot-command)",
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
