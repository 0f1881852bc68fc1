package rollout

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MirrorPodAnnotation marks a static pod's mirror in the API server.
const MirrorPodAnnotation = "kubernetes.io/config.mirror"

// PodsToDrain returns the pods a drain must see gone, like `kubectl drain`:
// DaemonSet pods stay (their controller would recreate them at once and they
// tolerate the cordon), mirror pods stay (the kubelet owns them), and pods that
// already finished do not count.
func PodsToDrain(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, mirror := p.Annotations[MirrorPodAnnotation]; mirror {
			continue
		}
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		out = append(out, p)
	}
	return out
}
