package agent

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// planOf is the live change plan the node runs now (nil: none): the node's
// own in nns, or else the cluster's NetshiftChangePlan, from the cache.
func (a *Agent) planOf(ctx context.Context, nns *v1alpha1.NetshiftNodeState) (*v1alpha1.LiveChangePlan, error) {
	if nns.Spec.LiveChange != nil {
		return nns.Spec.LiveChange, nil
	}
	var cp v1alpha1.NetshiftChangePlan
	err := a.Client.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftChangePlanName}, &cp)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node %s: read the cluster's live change plan: %w", a.Node, err)
	}
	if slices.Contains(cp.Spec.Without, a.Node) {
		return nil, nil // down, or behind: the operator catches the node up by a plan of its own
	}
	return livechange.PlanFor(nns.Spec.LiveChange, &cp.Spec, nns.Status.LiveChange), nil
}

// freshPlan is the plan the node runs as the cache shows it now: the node's
// state is read again (a NotFound error when it is gone).
func (a *Agent) freshPlan(ctx context.Context) (*v1alpha1.LiveChangePlan, error) {
	var nns v1alpha1.NetshiftNodeState
	if err := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &nns); err != nil {
		return nil, err
	}
	return a.planOf(ctx, &nns)
}
