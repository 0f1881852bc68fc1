package operator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
	poolmanager "netshift.io/netshift/internal/portpool/manager"
)

// portIDIndex indexes pods by the ID of the port they are plugged with.
const portIDIndex = "netshift.io/port-id"

// PortChassisReconciler keeps each plugged port's OVN logical switch port
// bound to the right chassis: while a VM migrates, its source and target pods
// use the same port on two nodes, and requested-chassis names both (source
// first) with activation-strategy=rarp, so neither chassis takes the port
// from the other and the target lets traffic through only once the resumed VM
// announces itself; afterwards the target alone. Requests are keyed by port
// ID (the logical switch port's name), not by pod: a pod's deletion must move
// the port it leaves behind.
//
// A pod may name any port in its annotation, so a port is bound only to pods
// it belongs to (plug.CheckOwner: recorded for the pod's namespace, or a
// Neutron port of the namespace's project); a pod refused gets an Event and
// is never bound.
type PortChassisReconciler struct {
	Client     client.Client
	Northbound ports
	// Southbound, when set, says where each port is bound: a migration's
	// source chassis is dropped from requested-chassis only once it has let
	// go of the port (plug.HandOver). nil: dropped at once.
	Southbound bindings
	Recorder   events.EventRecorder
	// Now is the clock of the hand-over's wait (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// handingOver is when each port's hand-over began to wait for its
	// leaving chassis (in memory: a restarted operator waits afresh).
	handingOver map[string]time.Time
}

// bindings is the southbound side (ovs.Southbound).
type bindings interface {
	PortBinding(ctx context.Context, port string) (ovs.PortBinding, error)
}

var _ bindings = (*ovs.Southbound)(nil)

// ports is the northbound side (ovs.Northbound), an interface for tests of
// the controller's reading of pods.
type ports interface {
	Port(ctx context.Context, port string) (options, ids map[string]string, ok bool, err error)
	SetPortOptions(ctx context.Context, port string, set map[string]string, remove []string) error
}

var _ ports = (*ovs.Northbound)(nil)

func portIDOf(pod *corev1.Pod) string {
	p, ok, err := plug.PortOf(pod.Annotations, string(pod.UID))
	if !ok || err != nil {
		return ""
	}
	return p.ID
}

func (r *PortChassisReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, portIDIndex, func(o client.Object) []string {
		if id := portIDOf(o.(*corev1.Pod)); id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("port-chassis").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			if id := portIDOf(o.(*corev1.Pod)); id != "" {
				return []ctrl.Request{{NamespacedName: types.NamespacedName{Name: id}}}
			}
			return nil
		})).Complete(r)
}

func (r *PortChassisReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	id := req.Name
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{portIDIndex: id}); err != nil {
		return ctrl.Result{}, err
	}
	current, ids, exists, err := r.Northbound.Port(ctx, id)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("port %s: %w", id, err)
	}
	var bindings []plug.Binding
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if !exists {
			// The port's creator (Neutron, the lab) may not have written it yet.
			return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
		}
		if err := r.owns(ctx, p, id, ids); err != nil {
			log.FromContext(ctx).Info("port refused to a pod", "port", id, "pod", p.Namespace+"/"+p.Name, "reason", err.Error())
			if r.Recorder != nil {
				r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "PortRefused", "BindPort", "not bound to this pod's node: %v", err)
			}
			continue
		}
		bindings = append(bindings, plug.Binding{Pod: p.Namespace + "/" + p.Name, Node: p.Spec.NodeName, Created: p.CreationTimestamp.Time,
			Target: p.Annotations[plug.MigrationTargetAnnotation] != ""})
	}
	if !exists {
		return ctrl.Result{}, nil
	}
	set, remove := plug.LogicalPortOptions(current, bindings)
	if len(set) == 0 && len(remove) == 0 {
		r.handedOver(id)
		return ctrl.Result{}, nil
	}
	if wait, err := r.handOverWait(ctx, id, current[plug.OptionRequestedChassis], set[plug.OptionRequestedChassis]); err != nil || wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	log.FromContext(ctx).Info("binding a port to its chassis", "port", id, "set", set, "remove", remove, "pods", len(bindings))
	if err := r.Northbound.SetPortOptions(ctx, id, set, remove); err != nil {
		return ctrl.Result{}, fmt.Errorf("port %s: %w", id, err)
	}
	r.handedOver(id)
	return ctrl.Result{}, nil
}

// handOverWait is how long to wait before requested-chassis goes from
// current to next (0: now): a chassis it drops must first let go of the port
// in the southbound database (plug.HandOver).
func (r *PortChassisReconciler) handOverWait(ctx context.Context, id, current, next string) (time.Duration, error) {
	if r.Southbound == nil || next == "" || len(plug.Leaving(current, strings.Split(next, ","))) == 0 {
		return 0, nil // nothing leaves: nothing to read
	}
	b, err := r.Southbound.PortBinding(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("port %s: %w", id, err)
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handingOver == nil {
		r.handingOver = map[string]time.Time{}
	}
	since, ok := r.handingOver[id]
	if !ok {
		since, r.handingOver[id] = now, now
	}
	if plug.HandOver(current, strings.Split(next, ","), b.Main, now.Sub(since), plug.HandOverLimit) {
		if now.Sub(since) >= plug.HandOverLimit {
			log.FromContext(ctx).Info("the leaving chassis never let go of the port: handing it over anyway", "port", id, "bound", b.Main, "waited", now.Sub(since).String())
		}
		return 0, nil
	}
	if !ok {
		log.FromContext(ctx).Info("waiting for the leaving chassis to let go of the port", "port", id, "bound", b.Main, "next", next)
	}
	return 10 * time.Millisecond, nil
}

// handedOver forgets a port's hand-over wait.
func (r *PortChassisReconciler) handedOver(id string) {
	r.mu.Lock()
	delete(r.handingOver, id)
	r.mu.Unlock()
}

// owns checks that the port is the pod's to have, from the port's record and
// the pod's namespace (never from anything the pod says).
func (r *PortChassisReconciler) owns(ctx context.Context, pod *corev1.Pod, id string, ids map[string]string) error {
	var ns corev1.Namespace
	if err := r.Client.Get(ctx, types.NamespacedName{Name: pod.Namespace}, &ns); err != nil {
		return fmt.Errorf("namespace %s: %w", pod.Namespace, err)
	}
	return plug.CheckOwner(id, ids, pod.Namespace, ns.Annotations[poolmanager.ProjectAnnotation])
}
