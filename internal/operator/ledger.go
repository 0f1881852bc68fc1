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

// Ledger serializes the decisions that grant a node's slot within the
// operator: the drain controller's passes and the zone controller's move
// starts both count every kind of hold, read past the cache while they hold
// it, so no two of them grant the last slot of a pool at once. Leader
// election keeps other processes out. The zero value is ready to use.
type Ledger struct{ mu sync.Mutex }

func (l *Ledger) Lock()   { l.mu.Lock() }
func (l *Ledger) Unlock() { l.mu.Unlock() }

// takeHold records h in the node's state, with whatever else mutate writes
// in the same patch (guarded by the state's resourceVersion), then cordons
// the node if hold.Take says so: recorded first, so a crash in between
// leaves a record whose next take cordons, never a cordon nobody owns.
func takeHold(ctx context.Context, c client.Client, st *v1alpha1.NodeNetworkState, node *corev1.Node, h v1alpha1.NodeHold,
	now time.Time, mutate func(*v1alpha1.NodeNetworkStateStatus)) error {
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
// forget a cordon.
func releaseHold(ctx context.Context, c client.Client, st *v1alpha1.NodeNetworkState, node *corev1.Node, k v1alpha1.HoldKind, id string,
	mutate func(*v1alpha1.NodeNetworkStateStatus)) error {
	next := st.Status.DeepCopy()
	unschedulable := node != nil && node.Spec.Unschedulable
	if hold.Release(next, k, id, unschedulable) == hold.Lift {
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
		return fmt.Errorf("record the end of its %s hold (%s): %w", k, id, err)
	}
	return nil
}

func setUnschedulable(ctx context.Context, c client.Client, node *corev1.Node, unschedulable bool) error {
	if node.Spec.Unschedulable == unschedulable {
		return nil
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = unschedulable
	return c.Patch(ctx, node, patch)
}
