//go:build !lab

package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"netshift.io/netshift/internal/agent"
)

// labBuild: this binary is the product's, without test hooks.
const labBuild = false

func labAgentFlags(*pflag.FlagSet) func(*agent.Options, *rest.Config) error {
	return func(*agent.Options, *rest.Config) error { return nil }
}

// labCommands are the lab builds' own commands: none here.
var labCommands []func() *cobra.Command
