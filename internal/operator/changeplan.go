package operator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// clusterPlan is the NetshiftChangePlan every node runs, read past the cache
// (one object, at most once a pass); nil when there is none.
func (r *LiveChangeReconciler) clusterPlan(ctx context.Context) (*v1alpha1.LiveChangePlan, error) {
	var cp v1alpha1.NetshiftChangePlan
	err := r.APIReader.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftChangePlanName}, &cp)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the cluster's live change plan: %w", err)
	}
	return &cp.Spec, nil
}

// removeClusterPlan removes the NetshiftChangePlan if it is change id's
// (the plan of a change that ended; never a later change's).
func (r *LiveChangeReconciler) removeClusterPlan(ctx context.Context, id string) error {
	var cp v1alpha1.NetshiftChangePlan
	err := r.APIReader.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftChangePlanName}, &cp)
	if apierrors.IsNotFound(err) || (err == nil && cp.Spec.ID != id) {
		return nil
	}
	if err == nil {
		err = r.Client.Delete(ctx, &cp, client.Preconditions{UID: &cp.UID, ResourceVersion: &cp.ResourceVersion})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the cluster's live change plan %s: %w", id, err)
	}
	return nil
}

// setClusterPlan writes plan as the NetshiftChangePlan every node runs: one
// write, which every agent's watch brings it.
func (r *LiveChangeReconciler) setClusterPlan(ctx context.Context, plan *v1alpha1.LiveChangePlan) error {
	cp := &v1alpha1.NetshiftChangePlan{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftChangePlanName}}
	cp.Spec = *plan.DeepCopy()
	err := r.Client.Create(ctx, cp)
	if apierrors.IsAlreadyExists(err) {
		// Replaced whole: the plan is the operator's alone, no other writer to merge with.
		var stored v1alpha1.NetshiftChangePlan
		if err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(cp), &stored); err == nil {
			stored.Spec = *plan.DeepCopy()
			err = r.Client.Update(ctx, &stored)
		}
	}
	if err != nil {
		return fmt.Errorf("write the cluster's live change plan %s: %w", plan.ID, err)
	}
	return nil
}

// keepOwnPlans gives each named node, before the cluster's plan goes, its own
// copy of it (unless it has a plan of its own already: a rollback's is kept):
// a node silent when the change ended runs it late when its agent comes back.
func (r *LiveChangeReconciler) keepOwnPlans(ctx context.Context, byNode map[string]*v1alpha1.NetshiftNodeState, names []string, id string) error {
	var missing []string
	for _, n := range names {
		if nns := byNode[n]; nns != nil && (nns.Spec.LiveChange == nil || livechange.OwnPlanOutdated(nns.Spec.LiveChange, id)) && !r.wrote(nns, id) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	cluster, err := r.clusterPlan(ctx)
	if err != nil || cluster == nil || cluster.ID != id {
		return err // gone already: a node without its plan is judged from its report alone
	}
	own := cluster.DeepCopy()
	// A node that comes back later would count the time it was away as the plan's delivery, and
	// it comes back alone: nothing to spread its answers among.
	own.WrittenAt, own.ClockSpreadMs, own.ReportSpreadMs, own.ConfirmWindowMs = nil, 0, 0, 0
	return fanOut(ctx, missing, nil, func(ctx context.Context, n string) error { return r.setPlan(ctx, byNode[n], own.DeepCopy()) })
}

// sweepClusterPlan removes a cluster plan left with no change in progress
// (its change's end was written by a pass that could not remove it, or the
// NetshiftNetwork was made again): every agent would keep to it, its
// operations and its network reports held back. It looks once every
// SouthboundResync, not at every pass.
func (r *LiveChangeReconciler) sweepClusterPlan(ctx context.Context) error {
	now := r.Now()
	if now.Sub(r.sweptAt) < r.SouthboundResync {
		return nil
	}
	r.sweptAt = now
	plan, err := r.clusterPlan(ctx)
	if err != nil || plan == nil {
		return err
	}
	log.FromContext(ctx).Info("removing the cluster's plan of a change no longer in progress", "change", plan.ID)
	return r.removeClusterPlan(ctx, plan.ID)
}
