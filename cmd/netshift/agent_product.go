//go:build !lab

package main

import (
	"github.com/spf13/pflag"

	"netshift.io/netshift/internal/agent"
)

// labBuild: this binary is the product's, without test hooks.
const labBuild = false

func labAgentFlags(*pflag.FlagSet) func(*agent.Options) { return func(*agent.Options) {} }
