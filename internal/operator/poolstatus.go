package operator

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/rollout"
)

// writePoolStatus records each NodePool's members and slot count, and each
// NodeNetworkState's owning pool, where they changed.
func (r *DrainReconciler) writePoolStatus(ctx context.Context, s *snapshot, m rollout.Membership) error {
	holding := map[string]int32{}
	for name, st := range s.states {
		if rollout.HoldsSlot(st.Status.DrainStatus) {
			holding[m.Owner[name]]++
		}
	}
	for i := range s.pools {
		np := &s.pools[i]
		want := v1alpha1.NodePoolStatus{
			Nodes:              m.Members[np.Name],
			NodeCount:          int32(len(m.Members[np.Name])),
			Draining:           holding[np.Name],
			Limit:              int32(m.Limit[np.Name]),
			ObservedGeneration: np.Generation,
		}
		if slices.Equal(np.Status.Nodes, want.Nodes) && np.Status.NodeCount == want.NodeCount &&
			np.Status.Draining == want.Draining && np.Status.Limit == want.Limit &&
			np.Status.ObservedGeneration == want.ObservedGeneration {
			continue
		}
		patch := client.MergeFrom(np.DeepCopy())
		np.Status = want
		if err := r.Client.Status().Patch(ctx, np, patch); err != nil {
			return fmt.Errorf("nodepool %s: write status: %w", np.Name, err)
		}
	}
	for name, st := range s.states {
		pool, ok := m.Owner[name]
		if !ok || st.Status.Pool == pool {
			continue
		}
		if err := r.updateStatus(ctx, st, func(s *v1alpha1.NodeNetworkStateStatus) { s.Pool = pool }); err != nil {
			return fmt.Errorf("node %s: record pool %s: %w", name, pool, err)
		}
	}
	return nil
}
