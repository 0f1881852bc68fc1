// Command netshift changes the network of a live Kubernetes cluster without
// taking it down. One binary: the operator, the node agent, and the commands
// people run (plan, status, reconfigure, abort, portpool). Built with -tags lab
// it is netshift-lab: the same commands plus the lab, the demo, the
// benchmarks and the agent's test hooks.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"netshift.io/netshift/internal/operator"
)

// Commands of the lab build only (-tags lab adds them in its init functions).
var (
	labCommands         []func(*globals) *cobra.Command
	portpoolLabCommands []func() *cobra.Command
)

// globals are the flags every subcommand shares.
type globals struct {
	kubeconfig string
	verbose    bool
}

func main() {
	g := &globals{}
	root := &cobra.Command{
		Use:           "netshift",
		Short:         "Change the network of a live Kubernetes cluster without taking it down",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			ctrl.SetLogger(zap.New(zap.UseDevMode(g.verbose)))
		},
	}
	root.PersistentFlags().StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster config, or ~/.kube/config)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "human-readable debug logs")
	root.AddCommand(operatorCmd(g), agentCmd(g), planCmd(g), statusCmd(g), reconfigureCmd(g), abortCmd(g), portpoolCmd(g), versionCmd(), changeCmd(g))
	for _, c := range labCommands {
		root.AddCommand(c(g))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "netshift:", err)
		os.Exit(1)
	}
}

func (g *globals) restConfig() (*rest.Config, error) {
	if g.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", g.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", g.kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to (give --kubeconfig or set KUBECONFIG): %w", err)
	}
	return cfg, nil
}

func (g *globals) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: operator.Scheme()})
}

// checkOutput validates the -o flag every listing command has.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("-o: %q is not text or json", output)
	}
	return nil
}

// writeJSON prints v as indented JSON, the -o json of every command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
