package rollout

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodsToDrain(t *testing.T) {
	ds := metav1.OwnerReference{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}
	rs := metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", Controller: ptr.To(true)}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", OwnerReferences: []metav1.OwnerReference{rs}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ds", OwnerReferences: []metav1.OwnerReference{ds}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "static", Annotations: map[string]string{MirrorPodAnnotation: "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "done"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		{ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: ptr.To(metav1.Now())}},
	}
	var got []string
	for _, p := range PodsToDrain(pods) {
		got = append(got, p.Name)
	}
	if want := "[web bare leaving]"; fmt.Sprint(got) != want {
		t.Fatalf("PodsToDrain = %v, want %s (DaemonSet, mirror and finished pods stay; a terminating pod is still waited for)", got, want)
	}
}
