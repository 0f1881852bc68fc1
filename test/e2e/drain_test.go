package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab"
)

// TestDrainBlockedByABudget: `netshift reconfigure` of node-2, which runs the
// only pod of a Deployment whose PodDisruptionBudget allows no disruption
// (computed by the real disruption controller). The operator cordons node-2,
// the eviction is refused, and the drain waits saying why (the node's drain
// message, `netshift status`, an EvictionBlocked event), the node cordoned by
// netshift for all to see. Once the budget allows it, the real kubelet stops
// the evicted pod, the operation succeeds, node-2 is uncordoned and the
// workload runs again.
func TestDrainBlockedByABudget(t *testing.T) {
	up(t, "e2edr", "--nodes", "3", "--pods-per-node", "1")
	s, err := lab.LoadState("e2edr")
	if err != nil {
		t.Fatal(err)
	}
	c := labClient(t, "e2edr")
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": "node-2"},
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "web", Image: images.WorkloadRef, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sleep", "2147483647"}}}}}}}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if err := c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the workload to run and the disruption controller to allow it no disruption", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(dep), dep) == nil && dep.Status.AvailableReplicas == 1 &&
			c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb) == nil && pdb.Status.ObservedGeneration == pdb.Generation &&
			pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0
	})

	mustNetshift(t, "--kubeconfig", s.Kubeconfig, "reconfigure", "--nodes", "node-2", "--id", "pdb-op")
	var nns v1alpha1.NodeNetworkState
	waitFor(t, "the drain to wait on the budget", func() bool {
		return c.Get(ctx, client.ObjectKey{Name: "node-2"}, &nns) == nil && nns.Status.DrainStatus == v1alpha1.Draining &&
			strings.Contains(nns.Status.DrainMessage, "web/web-")
	})
	if !labNodes(t, c)["node-2"] || !nns.Status.CordonedByNetshift {
		t.Errorf("node-2 cordoned %v, cordonedByNetshift %v: a waiting drain keeps its node cordoned, and says so", labNodes(t, c)["node-2"], nns.Status.CordonedByNetshift)
	}
	if out := mustNetshift(t, "--kubeconfig", s.Kubeconfig, "status"); !strings.Contains(out, "node-2") || !strings.Contains(out, "web/web-") {
		t.Errorf("netshift status does not show why node-2 waits:\n%s", out)
	}
	var events corev1.EventList
	waitFor(t, "an EvictionBlocked event on node-2", func() bool {
		if c.List(ctx, &events) != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Reason == "EvictionBlocked" && e.InvolvedObject.Name == "node-2" {
				return true
			}
		}
		return false
	})
	t.Logf("waiting on the budget: %s", nns.Status.DrainMessage)

	// The budget allows it: the eviction goes through, the real kubelet stops the pod.
	zero := intstr.FromInt32(0)
	pdb.Spec.MinAvailable = &zero
	if err := c.Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the operation to succeed and node-2 to be uncordoned", func() bool {
		return c.Get(ctx, client.ObjectKey{Name: "node-2"}, &nns) == nil && nns.Status.SyncOperation == "pdb-op" &&
			nns.Status.SyncStatus == v1alpha1.SyncSucceeded && nns.Status.DrainStatus == v1alpha1.DrainIdle && !labNodes(t, c)["node-2"]
	})
	waitFor(t, "the workload to run again on node-2", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(dep), dep) == nil && dep.Status.AvailableReplicas == 1
	})
	for n, cordoned := range labNodes(t, c) {
		if cordoned {
			t.Errorf("node %s left cordoned", n)
		}
	}
}
