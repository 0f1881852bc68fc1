// Package kubesim plays the parts of a cluster that a bare kube-apiserver
// lacks and that drains depend on: the kubelet (scheduled pods become Running
// and Ready; a pod being deleted is finished off, as the kubelet does once its
// containers stop) and the disruption controller (each PodDisruptionBudget's
// status is computed from its pods, so the Eviction API really enforces it).
// The operator's envtest-level tests and the drain demo run it against a bare
// API server; the lab has the real kubelets and controller manager instead.
package kubesim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sim runs the stand-ins over the pods of the given namespaces (all when empty).
type Sim struct {
	Client     client.Client
	Namespaces []string
	// Interval between rounds; 25 ms when zero.
	Interval time.Duration
}

// Run plays until ctx ends.
func (s *Sim) Run(ctx context.Context) {
	interval := s.Interval
	if interval == 0 {
		interval = 25 * time.Millisecond
	}
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for ctx.Err() == nil {
		for _, ns := range namespaces {
			s.round(ctx, ns)
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

func (s *Sim) round(ctx context.Context, ns string) {
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case !p.DeletionTimestamp.IsZero():
			_ = s.Client.Delete(ctx, p, client.GracePeriodSeconds(0))
		case p.Spec.NodeName != "" && p.Status.Phase != corev1.PodRunning:
			now := metav1.Now()
			p.Status.Phase = corev1.PodRunning
			// Others' conditions (netshift's network-ready) stay, as the kubelet keeps them.
			conds := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
			for _, c := range p.Status.Conditions {
				if c.Type != corev1.PodReady {
					conds = append(conds, c)
				}
			}
			p.Status.Conditions = conds
			p.Status.ContainerStatuses = nil
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
			}
			_ = s.Client.Status().Update(ctx, p)
		}
	}
	s.disruptionController(ctx, ns, pods.Items)
}

func (s *Sim) disruptionController(ctx context.Context, ns string, pods []corev1.Pod) {
	var pdbs policyv1.PodDisruptionBudgetList
	if err := s.Client.List(ctx, &pdbs, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pdbs.Items {
		pdb := &pdbs.Items[i]
		status, ok := BudgetStatus(pdb, pods)
		if !ok {
			continue
		}
		pdb.Status = status
		_ = s.Client.Status().Update(ctx, pdb) // a conflict with an eviction is retried next round
	}
}

// BudgetStatus computes a PodDisruptionBudget's status from the pods as the
// disruption controller does: a pod the Eviction API has marked disrupted and
// that is not yet deleting counts as unhealthy, so a budget never lets more go
// than it allows. It reports false for a budget with an invalid selector.
func BudgetStatus(pdb *policyv1.PodDisruptionBudget, pods []corev1.Pod) (policyv1.PodDisruptionBudgetStatus, bool) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return policyv1.PodDisruptionBudgetStatus{}, false
	}
	expected, healthy := 0, 0
	disrupted := map[string]metav1.Time{}
	for _, p := range pods {
		if p.Namespace != pdb.Namespace || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		expected++
		if t, ok := pdb.Status.DisruptedPods[p.Name]; ok && p.DeletionTimestamp.IsZero() {
			disrupted[p.Name] = t
			continue
		}
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning {
			healthy++
		}
	}
	desired := expected
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		mu, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
		desired = max(0, expected-mu)
	case pdb.Spec.MinAvailable != nil:
		desired, _ = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
	}
	return policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, ExpectedPods: int32(expected), CurrentHealthy: int32(healthy),
		DesiredHealthy: int32(desired), DisruptionsAllowed: int32(max(0, healthy-desired)), DisruptedPods: disrupted,
	}, true
}
