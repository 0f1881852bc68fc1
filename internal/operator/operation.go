package operator

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
)

// StartOperation writes op into the plan of each node. It checks every node
// first, so a wrong name changes nothing, and retries each write on a
// conflict with the controllers' status writes.
func StartOperation(ctx context.Context, c client.Client, op v1alpha1.NodeOperation, nodes []string) error {
	for _, n := range nodes {
		if err := c.Get(ctx, client.ObjectKey{Name: n}, &v1alpha1.NodeNetworkState{}); err != nil {
			return fmt.Errorf("node %s: no NodeNetworkState (is the node's name right, and the operator running?): %w", n, err)
		}
	}
	for _, n := range nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var nns v1alpha1.NodeNetworkState
			if err := c.Get(ctx, client.ObjectKey{Name: n}, &nns); err != nil {
				return err
			}
			nns.Spec.Operation = op.DeepCopy()
			return c.Update(ctx, &nns)
		})
		if err != nil {
			return fmt.Errorf("node %s: start operation %s: %w", n, op.ID, err)
		}
	}
	return nil
}
