package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateStartedPod creates a pod bound to a node of a bare control plane, one
// without kubelets, in the state its kubelet would report once its containers
// started: Running and Ready, so that the disruption controller counts it
// healthy. Its grace period is zero, so an eviction or a delete removes it at
// once, which the API server itself does for such pods, with no kubelet to
// confirm the containers stopped.
func CreateStartedPod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s/%s: spec.nodeName is empty: a started pod runs on a node", pod.Namespace, pod.Name)
	}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	if err := c.Create(ctx, pod); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = append(pod.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	if err := c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("pod %s/%s: record it started: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
