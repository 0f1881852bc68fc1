package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab"
)

// drainBlockedByABudget (a step of TestThreeNodeLab): `netshift reconfigure`
// of node-2, which runs the only pod of a Deployment whose PodDisruptionBudget
// allows no disruption (computed by the real disruption controller). The
// operator cordons node-2, the eviction is refused, and the drain waits saying
// why (the node's drain message, `netshift status`, an EvictionBlocked event),
// the node cordoned by netshift for all to see. Once the budget allows it, the
// real kubelet stops the evicted pod, the operation succeeds, node-2 is
// uncordoned and the workload runs again.
//
// Node-2 also runs the three replicas of a second Deployment whose budget
// allows one unavailable: the drain moves them one at a time (each eviction
// waits until the previous pod's replacement, scheduled on another node, is
// Ready), so two of them are Ready at every instant.
func drainBlockedByABudget(t *testing.T, name string) {
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	c := labClient(t, name)
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	dep := sleepers("web", 1, labels)
	dep.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-2"}
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
	db := pacedWorkloadOnNode2(t, c)

	mustNetshift(t, "--kubeconfig", s.Kubeconfig, "reconfigure", "--nodes", "node-2", "--id", "pdb-op")
	var nns v1alpha1.NetshiftNodeState
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
	db.check(t)
}

// pacedWorkload follows the Ready pods of the "db" Deployment from the API
// server's event stream.
type pacedWorkload struct {
	mu       sync.Mutex
	ready    map[string]bool // pod name: Ready and not deleting
	minReady int
	left     map[string]bool // pods that were on node-2 and are gone
	onNode2  map[string]bool
}

// pacedWorkloadOnNode2 starts the "db" Deployment's three replicas on node-2
// (the other nodes cordoned while they are scheduled), with a budget of one
// unavailable, and follows them.
func pacedWorkloadOnNode2(t *testing.T, c client.WithWatch) *pacedWorkload {
	t.Helper()
	ctx := context.Background()
	setCordon := func(node string, on bool) {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = on
		if err := c.Patch(ctx, &n, patch); err != nil {
			t.Fatalf("node %s: set unschedulable %v: %v", node, on, err)
		}
	}
	setCordon("node-1", true)
	setCordon("node-3", true)
	labels := map[string]string{"app": "db"}
	dep := sleepers("db", 3, labels)
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	maxUnavailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxUnavailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if err := c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db's three replicas Ready on node-2 and its budget allowing one disruption", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(dep), dep) == nil && dep.Status.AvailableReplicas == 3 &&
			c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb) == nil && pdb.Status.ObservedGeneration == pdb.Generation &&
			pdb.Status.CurrentHealthy == 3 && pdb.Status.DisruptionsAllowed == 1
	})
	setCordon("node-1", false)
	setCordon("node-3", false)

	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("web"), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	w := &pacedWorkload{ready: map[string]bool{}, left: map[string]bool{}, onNode2: map[string]bool{}}
	for _, p := range pods.Items {
		w.observe(&p, false)
	}
	if len(w.ready) != 3 || len(w.onNode2) != 3 {
		t.Fatalf("db: %d pods Ready, %d on node-2; want all 3 on node-2", len(w.ready), len(w.onNode2))
	}
	w.minReady = 3
	watchCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	events, err := c.Watch(watchCtx, &corev1.PodList{}, client.InNamespace("web"), client.MatchingLabels(labels),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pods.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range events.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				w.observe(p, ev.Type == watch.Deleted)
			}
		}
	}()
	return w
}

func (w *pacedWorkload) observe(p *corev1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ready := !deleted && p.DeletionTimestamp == nil
	if ready {
		ready = false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
	}
	if ready {
		w.ready[p.Name] = true
	} else {
		delete(w.ready, p.Name)
	}
	if p.Spec.NodeName == "node-2" {
		w.onNode2[p.Name] = true
		if deleted || p.DeletionTimestamp != nil {
			w.left[p.Name] = true
		}
	}
	if w.minReady > 0 {
		w.minReady = min(w.minReady, len(w.ready))
	}
}

// check asserts that the drain moved db's three pods off node-2 while keeping
// two Ready at every instant.
func (w *pacedWorkload) check(t *testing.T) {
	t.Helper()
	waitFor(t, "db's three pods to have left node-2 and three to be Ready elsewhere", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.left) == 3 && len(w.ready) == 3
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.minReady < 2 {
		t.Errorf("db: %d pods Ready at one instant of the drain; its budget (maxUnavailable 1) keeps 2", w.minReady)
	}
	t.Logf("db: its 3 pods left node-2 one at a time; fewest Ready at once: %d", w.minReady)
}

// sleepers is a Deployment in namespace web of replicas workload pods that
// sleep, stopped at once when evicted (a zero grace period).
func sleepers(name string, replicas int32, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: name, Image: images.WorkloadRef, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sleep", "2147483647"}}}}}}}
}
