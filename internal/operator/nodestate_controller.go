package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/rollout"
)

// LegacyDrainAnnotation is where the SR-IOV network operator kept a node's
// drain state. netshift moves it into the node's NetshiftNodeState status.
const LegacyDrainAnnotation = "sriovnetwork.openshift.io/state"

// NodeStateReconciler keeps exactly one NetshiftNodeState per Node: it creates
// the missing ones, deletes those whose Node is gone (the test API server runs
// no garbage collector, and owner references would not remove an object whose
// node is deleted while the operator is down any sooner), and adopts the
// legacy drain annotation.
type NodeStateReconciler struct {
	Client client.Client
	Clock  func() metav1.Time
}

func (r *NodeStateReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodestate").
		For(&corev1.Node{}).
		Watches(&v1alpha1.NetshiftNodeState{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
			})).
		Complete(r)
}

func (r *NodeStateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	nodeErr := r.Client.Get(ctx, req.NamespacedName, &node)
	if nodeErr != nil && !apierrors.IsNotFound(nodeErr) {
		return ctrl.Result{}, fmt.Errorf("node %s: get: %w", req.Name, nodeErr)
	}
	var nns v1alpha1.NetshiftNodeState
	nnsErr := r.Client.Get(ctx, req.NamespacedName, &nns)
	if nnsErr != nil && !apierrors.IsNotFound(nnsErr) {
		return ctrl.Result{}, fmt.Errorf("node %s: get NetshiftNodeState: %w", req.Name, nnsErr)
	}
	nodeGone := apierrors.IsNotFound(nodeErr) || !node.DeletionTimestamp.IsZero()
	switch {
	case nodeGone && nnsErr == nil:
		log.FromContext(ctx).Info("deleting NetshiftNodeState of a node that is gone", "node", req.Name)
		if err := r.Client.Delete(ctx, &nns, client.Preconditions{UID: &nns.UID}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("node %s: delete NetshiftNodeState: %w", req.Name, err)
		}
		return ctrl.Result{}, nil
	case nodeGone:
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(nnsErr):
		nns = v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
		if err := r.Client.Create(ctx, &nns); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("node %s: create NetshiftNodeState: %w", req.Name, err)
		}
		log.FromContext(ctx).Info("created NetshiftNodeState", "node", node.Name)
		return ctrl.Result{RequeueAfter: 10 * time.Millisecond}, nil // adopt the legacy annotation on the next pass, from fresh state
	}
	if err := r.adoptLegacyDrain(ctx, &node, &nns); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, adoptHolds(ctx, r.Client, &nns, r.Clock().Time)
}

// adoptLegacyDrain moves the SR-IOV operator's node annotation into the
// NetshiftNodeState: status first, annotation removed after, so a crash in
// between only repeats the (idempotent) first write. An in-flight legacy drain
// keeps its slot, and its cordon is netshift's to undo, until the node's agent
// releases it.
func (r *NodeStateReconciler) adoptLegacyDrain(ctx context.Context, node *corev1.Node, nns *v1alpha1.NetshiftNodeState) error {
	value, ok := node.Annotations[LegacyDrainAnnotation]
	if !ok {
		return nil
	}
	st := v1alpha1.DrainStatus(value)
	if (rollout.HoldsSlot(st) || st == v1alpha1.DrainRequired) &&
		(nns.Status.DrainStatus == "" || nns.Status.DrainStatus == v1alpha1.DrainIdle) {
		patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		now := r.Clock()
		nns.Status.DrainStatus = st
		nns.Status.DrainOperation = v1alpha1.LegacyDrainOperation
		nns.Status.DrainStartedAt = &now
		// The legacy controller cordoned the node for its drain: the cordon is netshift's. The
		// drain's hold is recorded with it.
		nns.Status.CordonedByNetshift = nns.Status.CordonedByNetshift || (node.Spec.Unschedulable && rollout.HoldsSlot(st))
		hold.Adopt(&nns.Status, now.Time)
		nns.Status.DrainMessage = fmt.Sprintf("adopted drain state %q from the node annotation %s", value, LegacyDrainAnnotation)
		if err := r.Client.Status().Patch(ctx, nns, patch); err != nil {
			return fmt.Errorf("node %s: move annotation %s=%q into NetshiftNodeState status: %w", node.Name, LegacyDrainAnnotation, value, err)
		}
	}
	patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(node.Annotations, LegacyDrainAnnotation)
	if err := r.Client.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("node %s: remove annotation %s: %w", node.Name, LegacyDrainAnnotation, err)
	}
	log.FromContext(ctx).Info("moved legacy drain annotation into NetshiftNodeState", "node", node.Name, "value", value)
	return nil
}
