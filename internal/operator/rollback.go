package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// decideRollback records the rollback p decided: its nodes and a new
// synchronized T0 a lead time ahead. The plans are written by the next pass
// (advanceRollback), once the decision is recorded.
func (r *LiveChangeReconciler) decideRollback(ch *v1alpha1.NetworkChange, p livechange.Progress) {
	t0 := metav1.NewMicroTime(r.Now().Add(r.pace.lead(r.Lead, len(p.RollBack))))
	ch.Phase = v1alpha1.PhaseRollingBack
	ch.Rollback = &v1alpha1.ChangeRollback{All: p.RollBackAll, Nodes: p.RollBack, T0: t0, Reason: p.Reason}
	ch.Converging = p.Silent
	ch.Message = fmt.Sprintf("%s; rollback T0 is %s", p.Message, t0.Format("15:04:05.000"))
}

// advanceRollback gives the rollback's nodes their plan where they lack it,
// follows their reports and, once every node has reported (or its deadline
// passed), ends the change: the nodes back in step are finished, the others
// are left behind (held, rebooting or silent) as the policy says.
func (r *LiveChangeReconciler) advanceRollback(ctx context.Context, cn *v1alpha1.NetshiftNetwork) (time.Duration, error) {
	ch, rb := cn.Status.Change, cn.Status.Change.Rollback
	var nodes corev1.NodeList
	var states v1alpha1.NetshiftNodeStateList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil { // from the cache, as collectReports
		return 0, err
	}
	if err := r.Client.List(ctx, &states, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	byNode := map[string]*v1alpha1.NetshiftNodeState{}
	for i := range states.Items {
		byNode[states.Items[i].Name] = &states.Items[i]
	}
	if err := r.planRollback(ctx, cn, byNode); err != nil {
		return 0, err
	}
	if rb.All && ch.Southbound == "Done" {
		if wait := rb.T0.Sub(r.Now()); wait > 0 {
			return wait, nil
		}
		ch.Southbound = "Rolled back"
		if err := r.setTunnelPortRecord(ctx, ch.Kind, ch.From); err != nil {
			ch.Southbound = "Failed: rollback: " + err.Error()
		}
	}
	reports := map[string]*v1alpha1.LiveChangeReport{}
	for _, n := range rb.Nodes {
		reports[n] = nil
		if nns := byNode[n]; nns != nil && nns.Status.LiveChange != nil && nns.Status.LiveChange.ID == livechange.RollbackID(ch.ID) {
			reports[n] = nns.Status.LiveChange
		}
	}
	controlPlane := map[string]bool{}
	for i := range nodes.Items {
		controlPlane[nodes.Items[i].Name] = isControlPlane(&nodes.Items[i])
	}
	deadline := r.since(latest(rb.T0.Time, r.answers.last(ch, reports, r.Now()))).Add(r.AnswerTimeout)
	policy := livechange.PolicyFromSpec(cn.Spec.OnFailure, len(nodes.Items))
	o := livechange.EvaluateRollback(rb, reports, r.Now(), deadline, policy, controlPlane)
	ch.Message = o.Message
	if o.Phase == v1alpha1.PhaseRollingBack {
		return livechange.NextLook(r.Now(), rb.T0.Time, livechange.Deadlines{Steps: deadline}, activeHeartbeat), nil
	}
	if !rb.All {
		// The nodes not rolled back run the new value: it is what is applied now.
		applied := livechange.Change{Kind: ch.Kind, From: ch.From, To: ch.To}.Apply(*cn.Status.Applied)
		cn.Status.Applied = &applied
	}
	ch.Phase = o.Phase
	ch.Converging = append(ch.Converging, o.Silent...)
	ch.Held, ch.Rebooting = o.Held, o.Reboot
	network := livechange.NodeConfig(*cn.Status.Applied, livechange.FromSpec(cn.Spec).Encapsulation)
	return 0, r.leaveBehind(ctx, nodes.Items, byNode, ch, network)
}

// planRollback writes the rollback plan of every node of the rollback that
// still has its plan of the change.
func (r *LiveChangeReconciler) planRollback(ctx context.Context, cn *v1alpha1.NetshiftNetwork, byNode map[string]*v1alpha1.NetshiftNodeState) error {
	ch := cn.Status.Change
	// The values from before the change: what a rolled-back node's new pods get.
	network := livechange.NodeConfig(*cn.Status.Applied, livechange.FromSpec(cn.Spec).Encapsulation)
	var unplanned []string
	for _, n := range ch.Rollback.Nodes {
		nns := byNode[n]
		if nns == nil || (nns.Spec.LiveChange != nil && nns.Spec.LiveChange.ID == livechange.RollbackID(ch.ID)) {
			continue // its rollback plan is written already
		}
		if r.wrote(nns, livechange.RollbackID(ch.ID)) {
			continue // written, and not in the cache yet
		}
		unplanned = append(unplanned, n)
	}
	if len(unplanned) == 0 {
		return nil
	}
	cluster, err := r.clusterPlan(ctx)
	if err != nil {
		return err
	}
	return fanOut(ctx, unplanned, &r.pace, func(ctx context.Context, n string) error {
		nns := byNode[n]
		plan := livechange.PlanFor(nns.Spec.LiveChange, cluster, nns.Status.LiveChange)
		if plan == nil || plan.ID != ch.ID {
			return nil // no plan of the change reached it: nothing to roll back
		}
		if err := r.setPlan(ctx, nns, livechange.RollbackPlan(plan, ch.Rollback.T0, r.Spacing, network,
			livechange.ReportSpread(len(ch.Rollback.Nodes), r.writeSpacing()))); err != nil {
			return err
		}
		log.FromContext(ctx).Info("rolling back", "node", n, "change", ch.ID, "t0", ch.Rollback.T0.Time)
		return nil
	})
}

// since is t, or this reconciler's start when later: a silent agent is judged
// only over time this operator was there to hear it.
func (r *LiveChangeReconciler) since(t time.Time) time.Time {
	if t.Before(r.listening) {
		return r.listening
	}
	return t
}
