//go:build lab

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spf13/pflag"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
)

// LabHookLabel prefixes the Node labels a lab build's agent reads its test
// hooks from on a lab of real nodes, whose agents come from config/lab with
// no extra flags: the lab sets them on the node (its kubelet registers them).
const LabHookLabel = "lab.netshift.io/"

// labAgentFlags are the agent's test hooks, only in lab builds (-tags lab):
// the product's agent refuses them as unknown flags. On a lab of real nodes
// they come from the node's labels instead (lab.netshift.io/clock-offset,
// lab.netshift.io/fail-step-once, steps joined by "_").
func labAgentFlags(f *pflag.FlagSet) func(*agent.Options, *rest.Config) error {
	var clockOffset time.Duration
	var failOnce []string
	f.DurationVar(&clockOffset, "clock-offset", 0, "shift this agent's clock (lab builds: tests of the clock check)")
	f.StringSliceVar(&failOnce, "fail-step-once", nil, "make the first run of these live-change steps fail (lab builds: tests of the restore action)")
	return func(o *agent.Options, cfg *rest.Config) error {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if node, err := cs.CoreV1().Nodes().Get(ctx, o.Node, metav1.GetOptions{}); err == nil {
			if v := node.Labels[LabHookLabel+"clock-offset"]; v != "" {
				if clockOffset, err = time.ParseDuration(v); err != nil {
					return fmt.Errorf("node label %sclock-offset: %w", LabHookLabel, err)
				}
			}
			if v := node.Labels[LabHookLabel+"fail-step-once"]; v != "" {
				failOnce = append(failOnce, strings.Split(v, "_")...)
			}
		}
		o.ClockOffset = clockOffset
		for _, s := range failOnce {
			o.FailStepOnce = append(o.FailStepOnce, v1alpha1.StepAction(s))
		}
		return nil
	}
}
