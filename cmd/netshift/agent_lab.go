//go:build lab

package main

import (
	"time"

	"github.com/spf13/pflag"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
)

// labBuild: this binary carries the lab's fault injection and test hooks.
const labBuild = true

// labAgentFlags are the agent's test hooks, only in lab builds (-tags lab):
// the product's agent refuses them as unknown flags.
func labAgentFlags(f *pflag.FlagSet) func(*agent.Options) {
	var clockOffset time.Duration
	var failOnce []string
	var labPods string
	f.DurationVar(&clockOffset, "clock-offset", 0, "shift this agent's clock (lab builds: tests of the clock check)")
	f.StringSliceVar(&failOnce, "fail-step-once", nil, "make the first run of these live-change steps fail (lab builds: tests of the restore action)")
	f.StringVar(&labPods, "lab-pods", "", "read the node's pods from this file of the process lab instead of a container runtime (lab builds)")
	return func(o *agent.Options) {
		o.ClockOffset = clockOffset
		for _, s := range failOnce {
			o.FailStepOnce = append(o.FailStepOnce, v1alpha1.StepAction(s))
		}
		if labPods != "" {
			o.Pods = agent.LabPods{File: labPods}
		}
	}
}
