package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/config"
	"netshift.io/netshift/internal/manifests"
	"netshift.io/netshift/internal/operator"
	poolmanager "netshift.io/netshift/internal/portpool/manager"
)

func uninstallCmd(g *globals) *cobra.Command {
	var u uninstallRun
	var timeout time.Duration
	var poolServer string
	var poolOpts poolmanager.ClientOptions
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Take netshift off the cluster: the pooled ports freed, netshift-cni and netshift's files off every node, then every object netshift installed deleted",
		Long: `Take netshift off the cluster, in an order that loses nothing: first the port pools'
ports no pod owns are deleted from Neutron (with the port pools on), then every node's agent
unchains netshift-cni (a .conf it turned into a list is the plugin's .conf again), removes its
binary and netshift's files, and reports; only once every node reported are netshift's objects
deleted (its DaemonSet, Deployment, RBAC, admission policies, namespace and CRDs). Nothing is
deleted while a node has not reported: run it again once the node's agent runs, or --force.
Ports netshift plugged stay plugged: they carry their pods' traffic.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usagef("--timeout %s: want more than 0", timeout)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if poolServer != "" {
				if u.pools, err = poolmanager.NewClient(poolServer, poolOpts); err != nil {
					return asUsage(err)
				}
			}
			u.c, u.out = c, cmd.OutOrStdout()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return u.run(ctx)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&u.force, "force", false, "uninstall even during a live change, and delete netshift's objects even if nodes did not report (clean those nodes by hand: docs/install.md)")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for every node's agent")
	f.StringVar(&poolServer, "portpool-server", "", "with the port pools on: the pool manager's API, as netshift portpool --server takes it (tcp:HOST:PORT, served by the elected operator)")
	f.StringVar(&poolOpts.Token, "portpool-token", os.Getenv("NETSHIFT_PORTPOOL_TOKEN"), "with --portpool-server tcp:...: the bearer token (default $NETSHIFT_PORTPOOL_TOKEN); RBAC must allow delete on portpools.netshift.io")
	f.StringVar(&poolOpts.CAFile, "portpool-ca-file", "", "with --portpool-server tcp:...: the CA certificate (PEM) of the API's certificate")
	f.BoolVar(&u.poolsDrained, "port-pools-drained", false, "with the port pools on: they were drained already (netshift portpool drain, run in the elected operator's pod)")
	return cmd
}

// uninstallRun is one `netshift uninstall`.
type uninstallRun struct {
	c            client.Client
	out          io.Writer
	pools        *poolmanager.Client
	force        bool
	poolsDrained bool
}

func (u uninstallRun) run(ctx context.Context) error {
	if err := u.checkIdle(ctx); err != nil {
		return err
	}
	if err := u.drainPools(ctx); err != nil {
		return err
	}
	if err := u.cleanNodes(ctx); err != nil {
		return err
	}
	return u.deleteObjects(ctx)
}

// checkIdle refuses to take netshift away in the middle of a live change.
func (u uninstallRun) checkIdle(ctx context.Context) error {
	var cn v1alpha1.NetshiftNetwork
	err := u.c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn)
	switch {
	case apierrors.IsNotFound(err) || meta404(err):
		return nil
	case err != nil:
		return err
	}
	if ch := cn.Status.Change; ch != nil && ch.Phase.Active() && !u.force {
		return fmt.Errorf("change %s is in progress (%s): let it finish or `netshift abort` it, or give --force", ch.ID, ch.Phase)
	}
	return nil
}

// meta404 is a kind the API server does not know (netshift's CRDs gone already).
func meta404(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no matches for kind")
}

// drainPools deletes the ports no pod owns from Neutron, before anything
// else: once the operator is gone, nothing would.
func (u uninstallRun) drainPools(ctx context.Context) error {
	var dep appsv1.Deployment
	err := u.c.Get(ctx, client.ObjectKey{Namespace: operator.Namespace, Name: "netshift-operator"}, &dep)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read the operator's Deployment: %w", err)
	}
	on := false
	for _, c := range dep.Spec.Template.Spec.Containers {
		on = on || slices.ContainsFunc(c.Args, portPoolsOn)
	}
	switch {
	case !on || u.poolsDrained:
		return nil
	case u.pools == nil:
		return usagef("the operator runs the port pools, whose ports must be deleted from Neutron first: give --portpool-server (and --portpool-token), " +
			"or run `netshift portpool drain` in the elected operator's pod (kubectl -n netshift-system get lease netshift-operator names it) and then give --port-pools-drained")
	}
	n, err := u.pools.Free(ctx, "")
	if err != nil {
		return fmt.Errorf("free the pooled ports (nothing was uninstalled): %w", err)
	}
	fmt.Fprintf(u.out, "%d pooled ports deleted from Neutron\n", n)
	return nil
}

// cleanNodes asks every node's agent to take netshift off its node and waits
// until every one reported. It asks again at each look: a node that joins
// meanwhile is asked too.
func (u uninstallRun) cleanNodes(ctx context.Context) error {
	last := ""
	for {
		left, err := u.nodesLeft(ctx)
		if meta404(err) {
			return nil // netshift's CRDs are gone: so is what the agents kept
		}
		if err != nil {
			return err
		}
		if line := left.line(); line != last {
			fmt.Fprintf(u.out, "%s %s\n", time.Now().Format(time.TimeOnly), line)
			last = line
		}
		if len(left.pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if u.force {
				fmt.Fprintf(u.out, "--force: deleting netshift's objects; clean %s by hand (docs/install.md)\n", strings.Join(left.pending, ", "))
				return nil
			}
			return fmt.Errorf("nodes %s did not report netshift taken off (is their agent running?); nothing was deleted: run `netshift uninstall` again, or give --force",
				strings.Join(left.pending, ", "))
		case <-time.After(time.Second):
		}
	}
}

// nodesLeft is where the nodes stand.
type nodesLeft struct {
	nodes   int
	pending []string
	// failed are the errors of agents that tried; stateless are nodes with no NetshiftNodeState.
	failed, stateless []string
}

func (l nodesLeft) line() string {
	line := fmt.Sprintf("%d/%d nodes clean", l.nodes-len(l.pending), l.nodes)
	if len(l.stateless) > 0 {
		line += "; no NetshiftNodeState (is the operator running?): " + strings.Join(l.stateless, ", ")
	}
	if len(l.failed) > 0 {
		line += "; " + strings.Join(l.failed, "; ")
	}
	return line
}

// nodesLeft asks every node's agent that was not asked yet, and names the
// nodes whose agent has not reported netshift off.
func (u uninstallRun) nodesLeft(ctx context.Context) (nodesLeft, error) {
	var nodes corev1.NodeList
	var states v1alpha1.NetshiftNodeStateList
	if err := u.c.List(ctx, &nodes); err != nil {
		return nodesLeft{}, err
	}
	if err := u.c.List(ctx, &states); err != nil {
		return nodesLeft{}, err
	}
	byName := map[string]*v1alpha1.NetshiftNodeState{}
	for i := range states.Items {
		byName[states.Items[i].Name] = &states.Items[i]
	}
	l := nodesLeft{nodes: len(nodes.Items)}
	for _, n := range nodes.Items {
		nns := byName[n.Name]
		switch {
		case nns == nil:
			l.pending, l.stateless = append(l.pending, n.Name), append(l.stateless, n.Name)
		case !nns.Spec.Uninstall:
			patch := client.MergeFrom(nns.DeepCopy())
			nns.Spec.Uninstall = true
			if err := u.c.Patch(ctx, nns, patch); err != nil {
				return l, fmt.Errorf("node %s: ask its agent to take netshift off: %w", n.Name, err)
			}
			l.pending = append(l.pending, n.Name)
		case nns.Status.Uninstall == nil || !nns.Status.Uninstall.Done:
			l.pending = append(l.pending, n.Name)
			if r := nns.Status.Uninstall; r != nil && r.Error != "" {
				l.failed = append(l.failed, r.Error)
			}
		}
	}
	sort.Strings(l.pending)
	return l, nil
}

// deleteObjects deletes what netshift's manifests install: the workloads
// first, the CRDs (and with them every NetshiftNodeState) last.
func (u uninstallRun) deleteObjects(ctx context.Context) error {
	objs, err := installedObjects()
	if err != nil {
		return err
	}
	var errs []error
	deleted := 0
	for _, o := range objs {
		err := u.c.Delete(ctx, o, client.PropagationPolicy("Background"))
		switch {
		case err == nil:
			deleted++
		case apierrors.IsNotFound(err) || meta404(err):
		default:
			errs = append(errs, fmt.Errorf("delete %s %s: %w", o.GetKind(), o.GetName(), err))
		}
	}
	fmt.Fprintf(u.out, "%d objects of netshift's deleted; netshift is uninstalled\n", deleted)
	return errors.Join(errs...)
}

// installedObjects are the objects of netshift's manifests (with every
// component's), in the order they are deleted.
func installedObjects() ([]*unstructured.Unstructured, error) {
	rank := map[string]int{"DaemonSet": 0, "Deployment": 0, "ValidatingAdmissionPolicyBinding": 1, "ValidatingAdmissionPolicy": 2,
		"FlowSchema": 1, "PriorityLevelConfiguration": 2,
		"RoleBinding": 3, "ClusterRoleBinding": 3, "Role": 4, "ClusterRole": 4, "ServiceAccount": 5, "Namespace": 6, "CustomResourceDefinition": 7}
	var objs []*unstructured.Unstructured
	for _, dir := range []string{"agent", "manager", "policy", "flowcontrol", "rbac", "components", "crd"} {
		sub, err := fs.Sub(config.Kustomize, dir)
		if err != nil {
			return nil, err
		}
		more, err := manifests.ReadFS(sub)
		if err != nil {
			return nil, fmt.Errorf("netshift's manifests (%s): %w", dir, err)
		}
		objs = append(objs, more...)
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank[objs[i].GetKind()] < rank[objs[j].GetKind()] })
	return objs, nil
}

// portPoolsOn says whether an operator argument turns the port pools on.
func portPoolsOn(arg string) bool {
	v, set := strings.CutPrefix(arg, "--port-pools")
	return set && (v == "" || v == "=true" || v == "=1")
}
