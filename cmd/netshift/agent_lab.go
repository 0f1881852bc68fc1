//go:build lab

package main

import (
	"context"
	"fmt"
	"os/exec"
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
	f.StringSliceVar(&failOnce, "fail-step-once", nil, "make the first run of these live-change steps fail; a step listed twice fails twice, the change's run and its rollback's (lab builds: tests of failure handling)")
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
		o.TunnelPortPath = execTunnelPort{nodes: cs, node: o.Node, socket: o.OVSDB}
		return nil
	}
}

// ExecPathLabel set to "exec" on a lab node makes its agent take the tunnel
// port step by running ovs-vsctl, as netshift did before it reached OVSDB
// through libovsdb: the benchmark runs both paths side by side.
const ExecPathLabel = LabHookLabel + "ovsdb-path"

// execTunnelPort is the exec path of the tunnel port step: one ovs-vsctl
// that finds the tunnels and one that sets their port (and, as ovs-vsctl
// does, waits for ovs-vswitchd to apply it).
type execTunnelPort struct {
	nodes  kubernetes.Interface
	node   string
	socket string
}

func (e execTunnelPort) Use(ctx context.Context) bool {
	n, err := e.nodes.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	return err == nil && n.Labels[ExecPathLabel] == "exec"
}

func (e execTunnelPort) Set(ctx context.Context, encapsulation string, port int) (int, error) {
	vsctl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "ovs-vsctl", append([]string{"--db=" + e.socket, "--timeout=10"}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ovs-vsctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return string(out), nil
	}
	out, err := vsctl("--bare", "--columns=name", "find", "interface", "type="+encapsulation)
	if err != nil {
		return 0, err
	}
	var args []string
	names := strings.Fields(out)
	for _, name := range names {
		args = append(args, "--", "set", "interface", name, fmt.Sprintf("options:dst_port=%d", port))
	}
	if len(args) == 0 {
		return 0, nil
	}
	_, err = vsctl(args[1:]...)
	return len(names), err
}
