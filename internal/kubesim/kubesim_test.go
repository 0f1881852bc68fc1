package kubesim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func pod(name string, phase corev1.PodPhase, deleting bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "x"}}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return p
}

func TestBudgetStatus(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	pods := []corev1.Pod{pod("a", corev1.PodRunning, false), pod("b", corev1.PodRunning, false), pod("c", corev1.PodRunning, false), pod("d", corev1.PodPending, false)}
	mu1 := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Generation: 3}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel, MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	st, ok := BudgetStatus(mu1, pods)
	if !ok || st.ExpectedPods != 4 || st.CurrentHealthy != 3 || st.DesiredHealthy != 3 || st.DisruptionsAllowed != 0 || st.ObservedGeneration != 3 {
		t.Fatalf("maxUnavailable 1 with one pod pending: %+v", st)
	}
	// One evicted (marked disrupted, not yet deleting): it no longer counts as healthy.
	mu1.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.Now()}
	st, _ = BudgetStatus(mu1, pods[:3])
	if st.CurrentHealthy != 2 || st.DisruptionsAllowed != 0 || len(st.DisruptedPods) != 1 {
		t.Fatalf("after one eviction: %+v", st)
	}
	// Its deletion seen: the mark goes, and the budget allows the next one.
	st, _ = BudgetStatus(mu1, []corev1.Pod{pod("b", corev1.PodRunning, false), pod("c", corev1.PodRunning, false)})
	if st.DisruptionsAllowed != 1 || len(st.DisruptedPods) != 0 {
		t.Fatalf("after the evicted pod is gone: %+v", st)
	}
	min2 := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: ptr.To(intstr.FromString("50%"))}}
	if st, _ := BudgetStatus(min2, pods[:3]); st.DesiredHealthy != 2 || st.DisruptionsAllowed != 1 {
		t.Fatalf("minAvailable 50%% of 3: %+v", st)
	}
	other := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	if st, _ := BudgetStatus(other, pods); st.ExpectedPods != 0 {
		t.Fatalf("pods of another namespace counted: %+v", st)
	}
}
