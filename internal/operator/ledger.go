package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
)

// Ledger serializes every take and release of a node's hold within the
// operator: the drain controller's passes, the zone controller's move starts
// and ends, and a live change's holds. Each reads the nodes and their states
// past the cache while it holds the ledger, so no two grant the last slot of
// a pool at once, and no release lifts a cordon that a hold taken a moment
// before still needs. Leader election keeps other processes out. The zero
// value is ready to use.
type Ledger struct{ mu sync.Mutex }

func (l *Ledger) Lock()   { l.mu.Lock() }
func (l *Ledger) Unlock() { l.mu.Unlock() }

// takeHold records h in the node's state, with whatever else mutate writes
// in the same patch (guarded by the state's resourceVersion), then cordons
// the node if hold.Take says so: recorded first, so a crash in between
// leaves a record whose next take cordons, never a cordon nobody owns.
func takeHold(ctx context.Context, c client.Client, st *v1alpha1.NetshiftNodeState, node *corev1.Node, h v1alpha1.NodeHold,
	now time.Time, mutate func(*v1alpha1.NetshiftNodeStateStatus)) error {
	if err := adoptNodeHold(ctx, c, st, node, now); err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(st.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cordon := hold.Take(&st.Status, h, node.Spec.Unschedulable, now)
	if mutate != nil {
		mutate(&st.Status)
	}
	if err := c.Status().Patch(ctx, st, patch); err != nil {
		return fmt.Errorf("record its %s hold (%s): %w", h.Kind, h.ID, err)
	}
	if cordon == hold.Set {
		if err := setUnschedulable(ctx, c, node, true); err != nil {
			return fmt.Errorf("cordon for its %s hold (%s): %w", h.Kind, h.ID, err)
		}
	}
	return nil
}

// releaseHold gives back the node's hold of kind k (held by id, "" any): the
// node is uncordoned first if that was the last hold netshift cordoned it
// for, then the state is written with whatever else mutate writes. A crash
// in between repeats the (idempotent) uncordon; the other order could
// forget a cordon. A write that fails after the uncordon puts the cordon
// back (best effort: the next release finds the hold again). A node whose
// cordon a remaining hold needs and someone lifted is cordoned again.
func releaseHold(ctx context.Context, c client.Client, st *v1alpha1.NetshiftNodeState, node *corev1.Node, k v1alpha1.HoldKind, id string,
	mutate func(*v1alpha1.NetshiftNodeStateStatus)) error {
	if node != nil {
		if err := adoptNodeHold(ctx, c, st, node, time.Now()); err != nil {
			return err
		}
	}
	next := st.Status.DeepCopy()
	unschedulable := node != nil && node.Spec.Unschedulable
	cordon := hold.Release(next, k, id, unschedulable)
	if cordon == hold.Lift {
		if err := setUnschedulable(ctx, c, node, false); err != nil {
			return fmt.Errorf("uncordon after its %s hold (%s): %w", k, id, err)
		}
	}
	patch := client.MergeFromWithOptions(st.DeepCopy(), client.MergeFromWithOptimisticLock{})
	st.Status.Holds, st.Status.CordonedByNetshift = next.Holds, next.CordonedByNetshift
	if mutate != nil {
		mutate(&st.Status)
	}
	if err := c.Status().Patch(ctx, st, patch); err != nil {
		if cordon == hold.Lift {
			_ = setUnschedulable(ctx, c, node, true)
		}
		return fmt.Errorf("record the end of its %s hold (%s): %w", k, id, err)
	}
	if cordon == hold.Set && node != nil {
		if err := setUnschedulable(ctx, c, node, true); err != nil {
			return fmt.Errorf("cordon again for the holds left after its %s hold (%s): %w", k, id, err)
		}
	}
	return nil
}

// adoptHolds writes, once, the holds an older operator recorded in its own
// fields (hold.Adopt), so that every decision after it reads one ledger.
func adoptHolds(ctx context.Context, c client.Client, st *v1alpha1.NetshiftNodeState, now time.Time) error {
	patch := client.MergeFromWithOptions(st.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if !hold.Adopt(&st.Status, now) {
		return nil
	}
	if err := c.Status().Patch(ctx, st, patch); err != nil {
		return fmt.Errorf("node %s: record as holds what an older operator recorded of its cordons and slots: %w", st.Name, err)
	}
	return nil
}

// freshNodes lists the nodes and their states past the cache, the older
// operator's records adopted: what a ledger decision reads (call it with the
// ledger held).
func freshNodes(ctx context.Context, c client.Client, reader client.Reader, now time.Time) (map[string]*corev1.Node, map[string]*v1alpha1.NetshiftNodeState, error) {
	var nodes corev1.NodeList
	if err := reader.List(ctx, &nodes); err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	var states v1alpha1.NetshiftNodeStateList
	if err := reader.List(ctx, &states); err != nil {
		return nil, nil, fmt.Errorf("list NetshiftNodeStates: %w", err)
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	stateOf := make(map[string]*v1alpha1.NetshiftNodeState, len(states.Items))
	for i := range states.Items {
		if err := adoptHolds(ctx, c, &states.Items[i], now); err != nil {
			return nil, nil, err
		}
		stateOf[states.Items[i].Name] = &states.Items[i]
	}
	return byName, stateOf, nil
}

func setUnschedulable(ctx context.Context, c client.Client, node *corev1.Node, unschedulable bool) error {
	if node.Spec.Unschedulable == unschedulable {
		return nil
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = unschedulable
	return c.Patch(ctx, node, patch)
}

// releaseHoldOnNode gives back a live change's hold recorded on the Node
// (hold.ReleaseOnNode: an operator that cordoned every node for an MTU
// change recorded it there): the state first when the cordon's owner changes,
// then one write to the Node that removes the record and, unless another
// hold still needs it, the cordon.
func releaseHoldOnNode(ctx context.Context, c client.Client, st *v1alpha1.NetshiftNodeState, node *corev1.Node, id string) error {
	if node.Annotations[hold.NodeAnnotation] != id {
		return nil
	}
	next := st.Status.DeepCopy()
	r := hold.ReleaseOnNode(next)
	if r.Record {
		patch := client.MergeFromWithOptions(st.DeepCopy(), client.MergeFromWithOptimisticLock{})
		st.Status.CordonedByNetshift = next.CordonedByNetshift
		if err := c.Status().Patch(ctx, st, patch); err != nil {
			return fmt.Errorf("record who owns the cordon after its live change hold (%s): %w", id, err)
		}
	}
	patch := client.MergeFrom(node.DeepCopy())
	delete(node.Annotations, hold.NodeAnnotation)
	if r.Uncordon {
		node.Spec.Unschedulable = false
	}
	if err := c.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("uncordon and give back its live change hold (%s): %w", id, err)
	}
	return nil
}

// adoptNodeHold moves a live change's hold recorded on the Node into the
// node's state (hold.AdoptNode) before another hold is taken or given back
// there, so that every decision reads one ledger: the state first, then the
// annotation goes (a crash in between leaves both, and the next adoption
// only removes the annotation).
func adoptNodeHold(ctx context.Context, c client.Client, st *v1alpha1.NetshiftNodeState, node *corev1.Node, now time.Time) error {
	id := node.Annotations[hold.NodeAnnotation]
	if id == "" {
		return nil
	}
	patch := client.MergeFromWithOptions(st.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if hold.AdoptNode(&st.Status, id, now) {
		if err := c.Status().Patch(ctx, st, patch); err != nil {
			return fmt.Errorf("record in its state the live change hold (%s) its Node records: %w", id, err)
		}
	}
	np := client.MergeFrom(node.DeepCopy())
	delete(node.Annotations, hold.NodeAnnotation)
	if err := c.Patch(ctx, node, np); err != nil {
		return fmt.Errorf("remove the record of its live change hold (%s), now in its state: %w", id, err)
	}
	return nil
}
