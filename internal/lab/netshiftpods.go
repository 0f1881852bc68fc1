package lab

import (
	"context"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/lab/standin"
	"netshift.io/netshift/internal/operator"
)

// netshift's own pods, as config/ installs them.
const (
	agentLabel    = "netshift-agent"
	operatorLabel = "netshift-operator"
	operatorLease = "netshift-operator"
)

// NetshiftPid is the host pid of one of netshift's processes in the lab, as
// its node's runtime runs it: role "operator" is the elected operator,
// "agent:NODE" the agent of NODE, "plugin:NODE" the network plugin stand-in's
// pod on NODE. 0 when none runs (between a crash and the
// kubelet's restart, or no leader yet).
func (s *State) NetshiftPid(ctx context.Context, role string) (int, error) {
	c, err := s.Client()
	if err != nil {
		return 0, err
	}
	node, label, container, ns := strings.TrimPrefix(role, "agent:"), agentLabel, "agent", operator.Namespace
	selector := client.MatchingLabels{"app.kubernetes.io/name": label}
	if strings.HasPrefix(role, "plugin:") {
		node, ns, container = strings.TrimPrefix(role, "plugin:"), standin.Namespace, "ovnkube"
		selector = client.MatchingLabels{"app": standin.NodeApp}
	} else if role == "operator" {
		var lease coordinationv1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: operator.Namespace, Name: operatorLease}, &lease); err != nil {
			return 0, client.IgnoreNotFound(err)
		}
		if lease.Spec.HolderIdentity == nil {
			return 0, nil
		}
		// controller-runtime's identity is the host's name and a UUID; the operator runs on the
		// node's network, whose host name is the node's.
		node, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
		container = "operator"
		selector = client.MatchingLabels{"app.kubernetes.io/name": operatorLabel}
	} else if node == role {
		return 0, fmt.Errorf("role %q: want operator, agent:NODE or plugin:NODE", role)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), selector); err != nil {
		return 0, err
	}
	n, ok := s.Topology.Node(node)
	if !ok {
		return 0, fmt.Errorf("role %q: lab %s has no node %q", role, s.Options.Name, node)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil {
			continue
		}
		rc, err := cri.Dial(s.kubeNode(n, "").Socket())
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		return rc.ContainerPid(ctx, p.Namespace, p.Name, container)
	}
	return 0, nil
}
