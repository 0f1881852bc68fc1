package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/rollout"
)

// writePoolStatus records each NetshiftNodePool's members and slot count, and each
// NetshiftNodeState's owning pool, where they changed.
func (r *DrainReconciler) writePoolStatus(ctx context.Context, s *snapshot, m rollout.Membership) error {
	holding := map[string]int32{}
	for name, st := range s.states {
		if hold.Busy(st.Status) {
			holding[m.Owner[name]]++
		}
	}
	invalid := map[string]error{}
	for _, ip := range s.invalid {
		invalid[ip.Name] = ip.Err
	}
	for i := range s.pools {
		np := &s.pools[i]
		want := v1alpha1.NetshiftNodePoolStatus{
			Nodes:              m.Members[np.Name],
			NodeCount:          int32(len(m.Members[np.Name])),
			Draining:           holding[np.Name],
			Limit:              int32(m.Limit[np.Name]),
			ObservedGeneration: np.Generation,
			Conditions:         slices.Clone(np.Status.Conditions),
		}
		conditionsChanged := meta.SetStatusCondition(&want.Conditions, validCondition(np, invalid[np.Name]))
		if meta.SetStatusCondition(&want.Conditions, overlapCondition(np, m.LostTies[np.Name])) {
			conditionsChanged = true
		}
		if !conditionsChanged && slices.Equal(np.Status.Nodes, want.Nodes) && np.Status.NodeCount == want.NodeCount &&
			np.Status.Draining == want.Draining && np.Status.Limit == want.Limit &&
			np.Status.ObservedGeneration == want.ObservedGeneration {
			continue
		}
		patch := client.MergeFrom(np.DeepCopy())
		np.Status = want
		if err := r.Client.Status().Patch(ctx, np, patch); err != nil {
			return fmt.Errorf("netshiftnodepool %s: write status: %w", np.Name, err)
		}
	}
	for name, st := range s.states {
		pool, ok := m.Owner[name]
		if !ok || st.Status.Pool == pool {
			continue
		}
		if err := r.updateStatus(ctx, st, func(s *v1alpha1.NetshiftNodeStateStatus) { s.Pool = pool }); err != nil {
			return fmt.Errorf("node %s: record pool %s: %w", name, pool, err)
		}
	}
	return nil
}

// validCondition says whether the pool's spec can be used, naming the field
// when not.
func validCondition(np *v1alpha1.NetshiftNodePool, err error) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.NetshiftNodePoolValid, ObservedGeneration: np.Generation,
		Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSpecValid, Message: "the spec is valid"}
	if err != nil {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec
		c.Message = err.Error() + "; no node it might own is given a slot or moved until the spec is fixed"
	}
	return c
}

// overlapCondition reports the nodes the pool selects that another pool of
// the same priority owns.
func overlapCondition(np *v1alpha1.NetshiftNodePool, lost []rollout.LostTie) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.NetshiftNodePoolOverlapping, ObservedGeneration: np.Generation,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoOverlap, Message: "no pool of the same priority owns a node this pool selects"}
	if len(lost) == 0 {
		return c
	}
	var parts []string
	const shown = 10
	for i, l := range lost {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(lost)-shown))
			break
		}
		parts = append(parts, l.Node+" (owned by "+l.Owner+")")
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonEqualPriority
	c.Message = fmt.Sprintf("%d node(s) this pool selects are owned by another pool of the same priority, whose name sorts first: %s; give the pools different priorities to choose",
		len(lost), strings.Join(parts, ", "))
	return c
}
