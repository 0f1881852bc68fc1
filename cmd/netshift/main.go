// Command netshift changes the network of a live Kubernetes cluster without
// taking it down. One binary: the operator, the node agent, and the commands
// people run (plan, status, reconfigure, abort, portpool). Built with -tags lab
// it is netshift-lab: the same commands plus the lab, the demo, the
// benchmarks and the agent's test hooks. Installed as kubectl-netshift it is
// also a kubectl plugin: kubectl netshift ...
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Commands of the lab build only (-tags lab adds them in its init functions).
var (
	labCommands         []func(*globals) *cobra.Command
	portpoolLabCommands []func() *cobra.Command
)

// globals are the flags every subcommand shares.
type globals struct {
	kubeconfig string
	context    string
	verbose    bool
	// started is set by the root's PersistentPreRunE once cobra has accepted
	// the command line (command, flags, arguments, required flags): an error
	// before that is cobra refusing it, a usage error (exit 2).
	started bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the process's exit code
// (exitCode: 0, 1, 2 or 3); tests call it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	g := &globals{}
	root := rootCmd(g, commandName(os.Args[0]))
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err != nil && !g.started {
		err = asUsage(err) // an unknown command or flag, a bad flag value, wrong arguments
	}
	if err != nil {
		fmt.Fprintln(stderr, "netshift:", err)
	}
	return exitCode(err)
}

// commandName is how usage lines name the command: "kubectl netshift" when
// kubectl runs this binary as its plugin kubectl-netshift (kubectl runs a
// plugin by its path, so its base name is argv[0]'s), else "netshift".
func commandName(argv0 string) string {
	if plugin, ok := strings.CutPrefix(filepath.Base(argv0), "kubectl-"); ok {
		// kubectl finds kubectl-a_b for `kubectl a-b`.
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-")
	}
	return "netshift"
}

func rootCmd(g *globals, name string) *cobra.Command {
	root := &cobra.Command{
		Use:           "netshift",
		Short:         "Change the network of a live Kubernetes cluster without taking it down",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: name},
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// cobra checks these only after this hook; checked here, a missing
			// required flag is a usage error too (g.started still false).
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return err
			}
			if err := cmd.ValidateFlagGroups(); err != nil {
				return err
			}
			g.started = true
			ctrl.SetLogger(zap.New(zap.UseDevMode(g.verbose)))
			return nil
		},
	}
	// A subcommand's own PersistentPreRun runs after this one instead of
	// replacing it, so every command marks g.started.
	cobra.EnableTraverseRunHooks = true
	f := root.PersistentFlags()
	f.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config; in a pod without either, the in-cluster config)")
	f.StringVar(&g.context, "context", "", "the kubeconfig context to use (default: its current-context)")
	f.BoolVarP(&g.verbose, "verbose", "v", false, "human-readable debug logs")
	root.AddCommand(operatorCmd(g), agentCmd(g), planCmd(g), statusCmd(g), reconfigureCmd(g), abortCmd(g), portpoolCmd(g), versionCmd(), changeCmd(g), uninstallCmd(g))
	for _, c := range labCommands {
		root.AddCommand(c(g))
	}
	return root
}
