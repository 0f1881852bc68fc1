package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"netshift.io/netshift/internal/atomicfile"
	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/portpool"
)

// poolNamespaces keeps the node's list of pool-enabled namespaces current
// for netshift-cni, which may read neither namespaces (as the node) nor
// trust what a pod says of itself.
type poolNamespaces struct {
	client client.Client
	path   string
	last   []string
	gate   *offGate
}

// Reconcile rewrites the list when it changed; any namespace event asks.
func (p *poolNamespaces) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var list corev1.NamespaceList
	if err := p.client.List(ctx, &list, client.MatchingLabels{portpool.OptInLabel: "enabled"}); err != nil {
		return ctrl.Result{}, fmt.Errorf("pool namespaces: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			names = append(names, ns.Name)
		}
	}
	slices.Sort(names)
	if p.last != nil && slices.Equal(p.last, names) {
		return ctrl.Result{}, nil
	}
	ran, err := p.gate.do(func() error { return cni.WritePoolNamespaces(p.path, names) })
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("pool namespaces: write %s: %w", p.path, err)
	}
	if !ran {
		return ctrl.Result{}, nil // netshift is off the node
	}
	p.last = names
	return ctrl.Result{}, nil
}

func addPoolNamespaces(mgr ctrl.Manager, path string, gate *offGate) error {
	p := &poolNamespaces{client: mgr.GetClient(), path: path, gate: gate}
	// Only the opt-in label matters: every other namespace change is ignored.
	return ctrl.NewControllerManagedBy(mgr).Named("pool-namespaces").
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(p)
}

// writeNodeKubeconfig writes netshift-cni's identity: the node's own
// kubeconfig (the kubelet's, as mounted from the node at from) with its
// credentials inlined, so the plugin reads as the node, which the API
// server's node authorizer lets read only the pods bound to it. It is
// rewritten when the node's credentials change (the kubelet rotates its
// client certificate). It reports whether the file changed.
func writeNodeKubeconfig(from, to string) (bool, error) {
	data, err := cni.NodeIdentity(from)
	if err != nil {
		return false, err
	}
	if cur, err := os.ReadFile(to); err == nil && bytes.Equal(cur, data) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return false, err
	}
	if err := atomicfile.Write(to, data, 0o600); err != nil {
		return false, fmt.Errorf("netshift-cni's kubeconfig %s: %w", to, err)
	}
	return true, nil
}
