package manager

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/portpool"
)

// Namespace label and annotations of the pod controller.
const (
	// OptInLabel on a namespace ("enabled") gives its pods pooled ports.
	OptInLabel = "netshift.io/port-pools"
	// ProjectAnnotation, NetworkAnnotation and SecurityGroupsAnnotation (comma-separated) on a
	// namespace choose its pods' pool; the operator's defaults fill what is missing.
	ProjectAnnotation        = "netshift.io/project"
	NetworkAnnotation        = "netshift.io/network"
	SecurityGroupsAnnotation = "netshift.io/security-groups"
	// TrunkAnnotation on a Node names its VM's trunk parent port: its pods get subports of that
	// trunk (nested) instead of ports bound to the node.
	TrunkAnnotation = "netshift.io/trunk-parent-port"
)

// Defaults fill what a namespace does not say.
type Defaults struct {
	Project, Network string
	SecurityGroups   []string
}

// PodController gives each scheduled pod of an opted-in namespace a pooled
// port, recorded on the pod, and releases it when the pod is gone.
type PodController struct {
	Client   client.Client
	Manager  *Manager
	Defaults Defaults
	Recorder events.EventRecorder
	// RetryAfter is how soon a pod that found its pool empty asks again (default 200 ms).
	RetryAfter time.Duration
}

func (r *PodController) SetupWithManager(mgr ctrl.Manager) error {
	if r.RetryAfter == 0 {
		r.RetryAfter = 200 * time.Millisecond
	}
	return ctrl.NewControllerManagedBy(mgr).Named("portpool").For(&corev1.Pod{}).Complete(r)
}

func (r *PodController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	owner := req.Namespace + "/" + req.Name
	var pod corev1.Pod
	if err := r.Client.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			if id, ok := r.Manager.Release(owner); ok {
				log.FromContext(ctx).V(1).Info("pod gone; port released", "pod", owner, "port", id)
			}
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Spec.HostNetwork {
		return ctrl.Result{}, nil
	}
	if _, ok, _ := AssignmentOf(&pod); ok {
		return ctrl.Result{}, nil
	}
	key, ok, err := r.keyFor(ctx, &pod)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	a, err := r.Manager.Acquire(ctx, &pod, key)
	switch {
	case errors.Is(err, ErrNotReady):
		return ctrl.Result{RequeueAfter: r.RetryAfter}, nil
	case err != nil:
		if r.Recorder != nil {
			r.Recorder.Eventf(&pod, nil, corev1.EventTypeWarning, "PortNotAssigned", "AssignPort", "%v", err)
		}
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("port assigned", "pod", owner, "port", a.ID, "pool", a.Pool)
	return ctrl.Result{}, nil
}

// keyFor is the pool of a pod: its namespace's project, network and groups,
// and its node (or the node's trunk). ok is false for a namespace that has
// not opted in.
func (r *PodController) keyFor(ctx context.Context, pod *corev1.Pod) (portpool.Key, bool, error) {
	var ns corev1.Namespace
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Namespace}, &ns); err != nil {
		return portpool.Key{}, false, client.IgnoreNotFound(err)
	}
	if ns.Labels[OptInLabel] != "enabled" {
		return portpool.Key{}, false, nil
	}
	project, network, groups := r.Defaults.Project, r.Defaults.Network, r.Defaults.SecurityGroups
	if v := ns.Annotations[ProjectAnnotation]; v != "" {
		project = v
	}
	if v := ns.Annotations[NetworkAnnotation]; v != "" {
		network = v
	}
	if v, ok := ns.Annotations[SecurityGroupsAnnotation]; ok {
		groups = strings.Split(v, ",")
	}
	var node corev1.Node
	host, trunk := pod.Spec.NodeName, ""
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, &node); err == nil && node.Annotations[TrunkAnnotation] != "" {
		host, trunk = "", node.Annotations[TrunkAnnotation]
	}
	key, err := portpool.NewKey(project, network, host, trunk, groups)
	if err != nil {
		if r.Recorder != nil {
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "NoPortPool", "AssignPort", "namespace %s: %v (set the %s and %s annotations, or the operator's defaults)",
				pod.Namespace, err, ProjectAnnotation, NetworkAnnotation)
		}
		return portpool.Key{}, false, nil
	}
	return key, true, nil
}
