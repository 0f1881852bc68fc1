package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/portpool"
)

// Namespace label and annotations of the pod controller.
const (
	// OptInLabel on a namespace ("enabled") gives its pods pooled ports.
	OptInLabel = portpool.OptInLabel
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
			// Before recovery the manager does not know who owns what yet: a pod gone in that
			// window (after recovery listed it, or just before) would keep its port for good.
			if !r.Manager.Ready() {
				return ctrl.Result{RequeueAfter: r.RetryAfter}, nil
			}
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
		// Said on the pod, where netshift-cni, waiting for the port, can read it.
		return ctrl.Result{RequeueAfter: r.RetryAfter}, r.setAssigned(ctx, &pod, corev1.ConditionFalse, v1alpha1.ReasonPoolNotReady, r.poolState(key, err))
	case err != nil:
		if r.Recorder != nil {
			r.Recorder.Eventf(&pod, nil, corev1.EventTypeWarning, "PortNotAssigned", "AssignPort", "%v", err)
		}
		return ctrl.Result{}, errors.Join(err, r.setAssigned(ctx, &pod, corev1.ConditionFalse, v1alpha1.ReasonPortFailed, err.Error()))
	}
	log.FromContext(ctx).V(1).Info("port assigned", "pod", owner, "port", a.ID, "pool", a.Pool)
	return ctrl.Result{}, r.setAssigned(ctx, &pod, corev1.ConditionTrue, v1alpha1.ReasonPortAssigned, "port "+a.ID+" of pool "+a.Pool)
}

// poolState says why a pod's pool could not hand it a port, with the pool's counts.
func (r *PodController) poolState(key portpool.Key, err error) string {
	d, ok := r.Manager.Show(key)
	if !ok {
		return err.Error()
	}
	state := fmt.Sprintf("%v; pool %s: %d ready, %d in use, %d recycling, %d being created", err, key, d.Ready, d.InUse, d.Recycling, d.Creating)
	if d.LastError != "" {
		state += "; last Neutron error: " + d.LastError
	}
	return state
}

// setAssigned writes the pod's port-assigned condition, only when the pod
// already carries one or this one says the port is not there yet: a pod
// served at once costs no write.
func (r *PodController) setAssigned(ctx context.Context, pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) error {
	var cur *corev1.PodCondition
	for i, c := range pod.Status.Conditions {
		if c.Type == v1alpha1.PodPortAssigned {
			cur = &pod.Status.Conditions[i]
		}
	}
	if cur == nil && status == corev1.ConditionTrue || cur != nil && cur.Status == status && cur.Reason == reason && cur.Message == msg {
		return nil
	}
	cond := corev1.PodCondition{Type: v1alpha1.PodPortAssigned, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	if cur != nil && cur.Status == status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s: condition %s: %w", OwnerOf(pod), v1alpha1.PodPortAssigned, err)
	}
	return nil
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
