package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/operator"
)

// restConfig is the cluster the command talks to, found as kubectl finds it:
// --kubeconfig, else the files of $KUBECONFIG merged, else ~/.kube/config;
// in a pod with none of them, the in-cluster config. --context picks a
// context of that kubeconfig instead of its current-context. A --kubeconfig
// that cannot be read or a --context it lacks is bad input (exit 2).
func (g *globals) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.context})
	raw, err := loader.RawConfig()
	switch {
	case err != nil && g.kubeconfig != "":
		return nil, usagef("--kubeconfig %s: %w", g.kubeconfig, err)
	case err != nil:
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	if _, ok := raw.Contexts[g.context]; g.context != "" && !ok {
		return nil, usagef("--context: %q is not a context of the kubeconfig (%s)", g.context, contextsOf(raw.Contexts))
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to (give --kubeconfig or --context, or set KUBECONFIG): %w", err)
	}
	if cfg.QPS == 0 {
		// No client-side rate limit, as controller-runtime's own loader: the API
		// server's priority and fairness applies.
		cfg.QPS = -1
	}
	return cfg, nil
}

// contextsOf names the contexts a kubeconfig has, for an error message.
func contextsOf[V any](contexts map[string]V) string {
	if len(contexts) == 0 {
		return "it has none"
	}
	names := make([]string, 0, len(contexts))
	for n := range contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return "its contexts: " + strings.Join(names, ", ")
}

// client is a controller-runtime client with netshift's types, on restConfig.
func (g *globals) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return c, nil
}
