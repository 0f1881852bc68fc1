package operator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/zones"
)

// The drain and zone controllers' passes read every node, state and pool: an
// update that cannot change their decisions must not cost one. At thousands
// of nodes a live change's reports, the kubelets' heartbeats, nodes going
// NotReady and back, kube-controller-manager's taints and the pods' status
// updates would otherwise keep them reading without end.

// stateChangedBeyondALiveChange says whether a NetshiftNodeState update can matter to a
// drain or a zone move: anything but a live change's plan and report and the
// observed network.
func stateChangedBeyondALiveChange(old, updated *v1alpha1.NetshiftNodeState) bool {
	return !equality.Semantic.DeepEqual(withoutALiveChange(old), withoutALiveChange(updated))
}

func withoutALiveChange(s *v1alpha1.NetshiftNodeState) *v1alpha1.NetshiftNodeState {
	v := &v1alpha1.NetshiftNodeState{Spec: s.Spec, Status: s.Status}
	v.Spec.LiveChange, v.Status.LiveChange, v.Status.Network = nil, nil, nil
	v.Labels, v.DeletionTimestamp = s.Labels, s.DeletionTimestamp
	return v
}

// drainNodeChanged says whether a Node update can matter to a drain: its
// labels (pool membership), its cordon or its deletion. Not a heartbeat, not
// its readiness (no drain decision reads it; its pods' own updates say what a
// drain waits for) and not the taints kube-controller-manager sets and lifts
// as a node's conditions come and go: at thousands of nodes those flip by
// the hundred during a live change, and each would cost a pass.
func drainNodeChanged(old, updated *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(old.Labels, updated.Labels) || old.Spec.Unschedulable != updated.Spec.Unschedulable ||
		!old.DeletionTimestamp.Equal(updated.DeletionTimestamp)
}

// zoneNodeChanged says whether a Node update can matter to the zone
// controller: what matters to a drain and the zone the network plugin says the
// node is in; where it moves zones (moves), the node's readiness too, since a
// node that is down is not moved. One that only reports writes nothing that
// readiness changes.
func zoneNodeChanged(moves bool) func(old, updated *corev1.Node) bool {
	return func(old, updated *corev1.Node) bool {
		return drainNodeChanged(old, updated) || old.Annotations[zones.ZoneAnnotation] != updated.Annotations[zones.ZoneAnnotation] ||
			(moves && nodeReady(old) != nodeReady(updated))
	}
}

// drainPodChanged says whether a Pod update can matter to a drain: where it
// runs, whether it is ending, its phase, its readiness and its labels (a
// replacement becoming Ready lets a PodDisruptionBudget allow the next eviction).
func drainPodChanged(old, updated *corev1.Pod) bool {
	return old.Spec.NodeName != updated.Spec.NodeName || !old.DeletionTimestamp.Equal(updated.DeletionTimestamp) ||
		old.Status.Phase != updated.Status.Phase || podReady(old) != podReady(updated) ||
		!equality.Semantic.DeepEqual(old.Labels, updated.Labels)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// networkChangedBeyondItsStatus says whether a NetshiftNetwork update can matter to a
// drain or a zone move: its spec (the drain policy; the zones' conditions
// carry its generation), its annotations (what a person sets to have it looked
// at again) or its deletion; not the status a live change writes at every
// step, on which each pass would read every node again.
func networkChangedBeyondItsStatus(old, updated *v1alpha1.NetshiftNetwork) bool {
	return old.Generation != updated.Generation || !old.DeletionTimestamp.Equal(updated.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.Annotations, updated.Annotations)
}

// onUpdate lets through every create, delete and generic event, and the
// updates changed says matter.
func onUpdate[T any](changed func(old, updated T) bool) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(T)
		updated, ok2 := e.ObjectNew.(T)
		return !ok1 || !ok2 || changed(old, updated)
	}}
}
