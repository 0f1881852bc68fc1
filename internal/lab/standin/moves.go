package standin

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab/poll"
	"netshift.io/netshift/internal/zones"
)

// RestartIntoZone moves a node the way netshift's operator does: its zone
// label set, its plugin pod deleted, and back once the pod the DaemonSet
// starts in its place has annotated the node and the annotations
// leftCentral follow its zone (zones.FollowZone).
func RestartIntoZone(ctx context.Context, c client.Client, node, zone string, leftCentral ...string) error {
	var n corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
		return err
	}
	p := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[zones.ZoneLabel] = zone
	if err := c.Patch(ctx, &n, p); err != nil {
		return fmt.Errorf("node %s: label %s=%s: %w", node, zones.ZoneLabel, zone, err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(Namespace), client.MatchingLabels{"app": NodeApp}); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			if err := c.Delete(ctx, &p); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("node %s: restart its plugin pod %s: %w", node, p.Name, err)
			}
		}
	}
	err := poll.Until(ctx, 20*time.Millisecond, 5*time.Minute, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, types.NamespacedName{Name: node}, &n)
		return err == nil && n.Annotations[zones.ZoneAnnotation] == zone, nil
	}, func() error {
		return fmt.Errorf("node %s: not annotated in zone %s within 5m by its new plugin pod", node, zone)
	})
	if err != nil {
		return err
	}
	p = client.MergeFrom(n.DeepCopy())
	if !zones.FollowZone(n.Annotations, leftCentral, zone) {
		return nil
	}
	if err := c.Patch(ctx, &n, p); err != nil {
		return fmt.Errorf("node %s, annotated in zone %s: make %v follow its zone: %w", node, zone, leftCentral, err)
	}
	return nil
}

// ScaleCentral scales the central zone's Deployment and waits until the zone
// runs (its pod ready and centralUp nil) or is retired (its pod gone and
// centralUp an error).
func ScaleCentral(ctx context.Context, c client.Client, replicas int32, centralUp func() error) error {
	return ScaleDeployment(ctx, c, CentralApp, map[string]string{"app": CentralApp}, replicas, centralUp)
}

// ScaleDeployment scales a Deployment of the plugin's namespace whose pods
// carry podLabels and waits until its pods are ready (and up, when given,
// says nil) or gone (and up says an error): the central zone of the
// stand-in's or of the real OVN-Kubernetes.
func ScaleDeployment(ctx context.Context, c client.Client, name string, podLabels map[string]string, replicas int32, up func() error) error {
	// runs says whether the zone runs, when the caller can tell: nil, the pods alone say.
	runs := func(want bool) bool { return up == nil || (up() == nil) == want }
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("scale %s/%s to %d: %w", Namespace, name, replicas, err)
	}
	return poll.Until(ctx, 50*time.Millisecond, 5*time.Minute, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, nil
		}
		if replicas == 0 {
			var pods corev1.PodList
			err := c.List(ctx, &pods, client.InNamespace(Namespace), client.MatchingLabels(podLabels))
			return err == nil && len(pods.Items) == 0 && runs(false), nil
		}
		return dep.Status.ReadyReplicas >= replicas && runs(true), nil
	}, func() error {
		return fmt.Errorf("deployment %s/%s did not reach %d ready replicas within 5m", Namespace, name, replicas)
	})
}
