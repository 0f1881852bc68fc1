package lab

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab/poll"
	"netshift.io/netshift/internal/lab/standin"
)

// The network plugin's pods in a lab whose OVN topology the lab builds are
// the stand-in's (package standin).

// runsPlugin says whether the lab runs the stand-in: an OVN lab, but not a
// Neutron one (Neutron's ML2/OVN owns its central databases, which never
// change zones).
func (s *State) runsPlugin() bool { return s.Options.OVN && !s.Options.Neutron }

// pluginZoneLabel is the zone label a node of this lab registers with: the
// layout it was built in ("" for the legacy one, which has no zones).
func (s *State) pluginZoneLabel(node string) string {
	switch {
	case !s.Options.OVN && !s.runsOVNKubernetes() || s.Options.Zones == ZonesLegacy:
		return ""
	case s.Options.Zones == ZonesMulti:
		return node
	}
	return globalZone
}

// serveCalls answers the stand-in pods' calls until ctx ends.
func (s *State) serveCalls(ctx context.Context, binary string) {
	dirs := map[string]string{}
	for _, n := range s.Topology.Nodes {
		dirs[n.Name] = s.labDir(n.Name)
	}
	standin.Answerer{Binary: binary, Lab: s.Options.Name, NodeDirs: dirs}.Serve(ctx)
}

// scaleCentral scales the stand-in's central Deployment and waits until the
// lab's central zone runs, or is retired.
func (s *State) scaleCentral(ctx context.Context, c client.Client, replicas int32) error {
	return standin.ScaleCentral(ctx, c, replicas, s.centralUp)
}

// pauseOperator scales netshift's operator to 0 until the returned restore.
func pauseOperator(ctx context.Context, c client.Client) (restore func() error, err error) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "netshift-system", Name: "netshift-operator"}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		return nil, err
	}
	was := ptr.Deref(dep.Spec.Replicas, 1)
	scale := func(n int32) error {
		return c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))))
	}
	if err := scale(0); err != nil {
		return nil, fmt.Errorf("pause the operator: %w", err)
	}
	if err := poll.Until(ctx, 50*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
		var pods corev1.PodList
		err := c.List(ctx, &pods, client.InNamespace("netshift-system"), client.MatchingLabels{"app.kubernetes.io/name": operatorLabel})
		return err == nil && len(pods.Items) == 0, nil
	}, func() error { return fmt.Errorf("the operator's pods did not stop within 2m") }); err != nil {
		return nil, err
	}
	return func() error {
		if err := scale(was); err != nil {
			return fmt.Errorf("restore the operator: %w", err)
		}
		return poll.Until(context.Background(), 50*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
			err := c.Get(context.Background(), client.ObjectKeyFromObject(dep), dep)
			return err == nil && dep.Status.ReadyReplicas >= was, nil
		}, func() error { return fmt.Errorf("the operator did not come back within 2m") })
	}, nil
}
