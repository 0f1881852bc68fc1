//go:build !lab

package main

import (
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"netshift.io/netshift/internal/agent"
)

func labAgentFlags(*pflag.FlagSet) func(*agent.Options, *rest.Config) error {
	return func(*agent.Options, *rest.Config) error { return nil }
}
