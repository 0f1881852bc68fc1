package cni

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// podRef is the pod a sandbox is for, as the runtime names it (CNI_ARGS).
type podRef struct {
	Namespace, Name, UID string
}

func (p podRef) String() string { return p.Namespace + "/" + p.Name }

// errPodGone is a pod deleted, or replaced by another of its name, while
// its sandbox was being wired: the kubelet tears the sandbox down.
var errPodGone = errors.New("the pod is gone")

// assignmentOf decides what a read of the pod says of its port: the
// operator's record (done), nothing yet, or that the sandbox is stale. Only
// the record the operator wrote counts (an admission policy keeps anyone
// else from writing it), and only on the pod this sandbox is for: same UID,
// bound to this node, not being deleted.
func assignmentOf(pod *corev1.Pod, want podRef, node string) (a portpool.Assignment, done bool, err error) {
	switch {
	case string(pod.UID) != want.UID:
		return a, false, fmt.Errorf("pod %s: %w: it is now UID %s, this sandbox is for UID %s", want, errPodGone, pod.UID, want.UID)
	case pod.DeletionTimestamp != nil:
		return a, false, fmt.Errorf("pod %s: %w: it is being deleted", want, errPodGone)
	case pod.Spec.NodeName != node:
		return a, false, fmt.Errorf("pod %s is bound to node %q, not to this node %s", want, pod.Spec.NodeName, node)
	}
	raw, ok := pod.Annotations[plug.PoolAnnotation]
	if !ok {
		return a, false, nil
	}
	a, err = portpool.ParseAssignment(raw)
	if err != nil {
		return a, false, fmt.Errorf("pod %s: annotation %s: %w", want, plug.PoolAnnotation, err)
	}
	return a, true, nil
}

// waitState says, for the error of a wait that ran out, what the operator
// last said of the pod's port (its netshift.io/port-assigned condition).
func waitState(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1alpha1.PodPortAssigned {
			return fmt.Sprintf("the operator says %s: %s", c.Reason, c.Message)
		}
	}
	return "the operator has said nothing of this pod's port (is it running with --port-pools, and is the pod's namespace opted in?)"
}

// waitForAssignment waits until ctx ends for the operator's record of the
// pod's port, reading as the node: a get, then a watch of that one pod.
func waitForAssignment(ctx context.Context, pods corev1client.PodsGetter, want podRef, node string) (portpool.Assignment, error) {
	last, err := pods.Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return portpool.Assignment{}, fmt.Errorf("pod %s: %w", want, err)
	}
	for {
		if a, done, err := assignmentOf(last, want, node); done || err != nil {
			return a, err
		}
		// The node may list and watch only the pods bound to it: the selector says so.
		sel := fields.AndSelectors(fields.OneTermEqualSelector("metadata.name", want.Name), fields.OneTermEqualSelector("spec.nodeName", node))
		w, err := pods.Pods(want.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: sel.String(), ResourceVersion: last.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return portpool.Assignment{}, portWaitExpired(want, last)
			}
			return portpool.Assignment{}, fmt.Errorf("pod %s: watch: %w", want, err)
		}
		next, err := nextPod(ctx, w, want, last)
		w.Stop()
		if err != nil {
			return portpool.Assignment{}, err
		}
		last = next
	}
}

// nextPod waits for the pod's next change; a watch that ended early (the
// API server's timeout) gives the last pod back to watch again.
func nextPod(ctx context.Context, w watch.Interface, want podRef, last *corev1.Pod) (*corev1.Pod, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, portWaitExpired(want, last)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, fmt.Errorf("pod %s: %w: deleted while its port was awaited", want, errPodGone)
			case watch.Error:
				return nil, fmt.Errorf("pod %s: watch: %v", want, ev.Object)
			}
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				return pod, nil
			}
		}
	}
}

func portWaitExpired(want podRef, last *corev1.Pod) error {
	return fmt.Errorf("pod %s: no Neutron port recorded for it by netshift's operator in time; %s", want, waitState(last))
}
