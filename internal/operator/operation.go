package operator

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
)

// StartOperation writes op into the plan of each node. It checks every node
// first (one list), so a wrong name changes nothing, then writes the plans
// fanOutWidth at once, each retried on a conflict with the controllers'
// status writes: every node asks at about the same moment, so the pools'
// first waves are full.
func StartOperation(ctx context.Context, c client.Client, op v1alpha1.NodeOperation, nodes []string) error {
	if len(nodes) == 0 {
		return fmt.Errorf("operation %s: no nodes given", op.ID)
	}
	var states v1alpha1.NetshiftNodeStateList
	if err := c.List(ctx, &states); err != nil {
		return fmt.Errorf("operation %s: list NetshiftNodeStates: %w", op.ID, err)
	}
	byName := make(map[string]*v1alpha1.NetshiftNodeState, len(states.Items))
	for i := range states.Items {
		byName[states.Items[i].Name] = &states.Items[i]
	}
	for _, n := range nodes {
		nns, ok := byName[n]
		if !ok {
			return fmt.Errorf("node %s: no NetshiftNodeState (is the node's name right, and the operator running?)", n)
		}
		// An ID already used on a node would be taken as done (or as the one in
		// progress) and nothing would happen: refuse it before writing anything.
		if usedOperationID(nns, op.ID) {
			return fmt.Errorf("--id: operation %s was already started on node %s: give a new ID", op.ID, n)
		}
	}
	return fanOut(ctx, nodes, nil, func(ctx context.Context, n string) error {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var nns v1alpha1.NetshiftNodeState
			if err := c.Get(ctx, client.ObjectKey{Name: n}, &nns); err != nil {
				return err
			}
			nns.Spec.Operation = op.DeepCopy()
			return c.Update(ctx, &nns)
		})
		if err != nil {
			return fmt.Errorf("node %s: start operation %s: %w", n, op.ID, err)
		}
		return nil
	})
}

// usedOperationID says whether the node has seen the operation ID.
func usedOperationID(nns *v1alpha1.NetshiftNodeState, id string) bool {
	return nns.Spec.Operation != nil && nns.Spec.Operation.ID == id ||
		nns.Status.SyncOperation == id || nns.Status.DrainOperation == id
}
