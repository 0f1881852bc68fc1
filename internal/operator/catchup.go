package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// catchUpLook is how often the nodes a change went ahead without are looked
// at when no event comes (a Node turning Ready is not watched here).
const catchUpLook = 10 * time.Second

// clockWait is how long an agent's precondition check may wait for the
// operator's time endpoint (the agent's clockWaitFor): a catch-up's agent is
// not silent before it has had that.
const clockWait = 90 * time.Second

// catchUp brings the nodes a change went ahead without (status.change.down)
// to the applied values once they are back: each gets a catch-up plan of
// its own, one change at a time, within its pool's limit, and leaves the
// list when its agent reports the applied values. One that cannot catch up
// is held cordoned for a person. A node deleted, or no longer running the
// agent, leaves the list.
func (r *LiveChangeReconciler) catchUp(ctx context.Context, cn *v1alpha1.NetshiftNetwork) error {
	ch, applied := cn.Status.Change, cn.Status.Applied
	if ch == nil || len(ch.Down) == 0 || applied == nil {
		return nil
	}
	nodes, states, m, err := r.poolsView(ctx)
	if err != nil {
		return err
	}
	now := r.Now()
	facts := map[string]livechange.NodeFacts{}
	for _, f := range r.Placement.Facts(ctx, nodes.Items, now) {
		facts[f.Name] = f
	}
	byNode := map[string]*v1alpha1.NetshiftNodeState{}
	for i := range states.Items {
		byNode[states.Items[i].Name] = &states.Items[i]
	}
	var behind []livechange.CatchingUp
	for _, n := range ch.Down {
		f, ok := facts[n]
		if !ok || !f.RunsAgent {
			continue // gone, or no agent runs there any more
		}
		c := livechange.CatchingUp{Name: n}
		if nns := byNode[n]; nns != nil {
			c.Back, c.Observed, c.Plan, c.Report = f.Ready, nns.Status.Network, nns.Spec.LiveChange, nns.Status.LiveChange
			if p, ok := r.planned.Load(n); c.Plan == nil && ok && p.(plannedAs).UID == nns.UID && livechange.IsCatchUp(p.(plannedAs).ID) {
				c.Plan = &v1alpha1.LiveChangePlan{ID: p.(plannedAs).ID} // written, not in the cache yet
			}
		}
		behind = append(behind, c)
	}
	encap := livechange.FromSpec(cn.Spec).Encapsulation
	d := livechange.DecideCatchUps(behind, *applied, encap)
	down := make([]string, 0, len(behind))
	for _, c := range behind {
		down = append(down, c.Name)
	}
	for _, n := range d.InStep {
		if p := byNode[n].Spec.LiveChange; p != nil && livechange.IsCatchUp(p.ID) {
			if err := r.setPlan(ctx, byNode[n], nil); err != nil {
				return err
			}
		}
		ch.Message = addNote(ch.Message, fmt.Sprintf("node %s is back at the applied values", n))
	}
	for _, n := range sortedKeys(d.Failed) {
		if err := r.holdNode(ctx, n, ch.ID); err != nil {
			return err
		}
		if err := r.removePlans(ctx, byNode, []string{n}); err != nil {
			return err
		}
		ch.Held = livechange.Union(ch.Held, []string{n})
		ch.Message = addNote(ch.Message, fmt.Sprintf("node %s could not catch up (%s): held cordoned for a person", n, d.Failed[n]))
	}
	// A catch-up whose agent has not reported by --answer-timeout after its T0 keeps running, but
	// no longer holds its pool's slot: one silent agent must not hold every other node back.
	holding := slices.DeleteFunc(slices.Clone(d.Running), func(n string) bool {
		p := byNode[n].Spec.LiveChange
		return p != nil && p.T0 != nil && now.Sub(p.T0.Time) > r.AnswerTimeout+clockWait
	})
	for _, n := range m.Allow(sortedKeys(d.Start), holding) {
		c := d.Start[n]
		// T0 now: the node runs it alone, with nobody to keep time with, its steps as soon as its
		// preconditions pass, so that its pods carry the applied values as soon as can be.
		plan := livechange.CatchUpPlan(c, r.Plugin.Steps(c.Kind, encap), r.Spacing, now, r.Plugin.Name(), *applied, encap,
			livechange.FromSpec(cn.Spec).UnderlayMTU)
		if err := r.setPlan(ctx, byNode[n], plan); err != nil {
			return err
		}
		log.FromContext(ctx).Info("a node that was down catches up", "node", n, "plan", plan.ID, "from", c.From, "to", c.To, "t0", plan.T0.Time)
		ch.Message = addNote(ch.Message, fmt.Sprintf("node %s is back and catches up (%s %d -> %d)", n, c.Kind, c.From, c.To))
	}
	ch.Down = slices.DeleteFunc(down, func(n string) bool { return slices.Contains(d.InStep, n) || d.Failed[n] != "" })
	if ch.T0 != nil && len(d.Failed) > 0 {
		ch.Failed = int32(len(ch.Converging) + len(ch.Held) + len(ch.Rebooting))
	}
	return nil
}

// addNote adds note to a change's message once, while the message is short
// enough to read: the nodes are listed whole in the status's lists.
func addNote(msg, note string) string {
	if len(msg) > maxMessage || strings.Contains(msg, note) {
		return msg
	}
	return msg + "; " + note
}

// maxMessage is how long a change's message grows with notes.
const maxMessage = 2048

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// revertAfterAbort rolls back the nodes that ran steps of an aborted change
// anyway (an agent that could not confirm the plan in time and whose cache
// still showed it): each gets a rollback plan of its own, is named in the
// message, and converges as a silent node does; the change stays Aborted.
func (r *LiveChangeReconciler) revertAfterAbort(ctx context.Context, cn *v1alpha1.NetshiftNetwork) error {
	ch := cn.Status.Change
	// A step run anyway is reported within the report window after T0; a few more answer timeouts
	// cover an agent's retries.
	if ch == nil || ch.Phase != v1alpha1.PhaseAborted || ch.T0 == nil || cn.Status.Applied == nil || r.Now().After(ch.T0.Add(4*r.AnswerTimeout+time.Minute)) {
		return nil
	}
	var states v1alpha1.NetshiftNodeStateList
	if err := r.Client.List(ctx, &states, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var ran []string
	var what []string
	ranStates := map[string]*v1alpha1.NetshiftNodeState{}
	for i := range states.Items {
		nns := &states.Items[i]
		rep := nns.Status.LiveChange
		if rep == nil || rep.ID != ch.ID || len(rep.Steps) == 0 || (ch.Rollback != nil && slices.Contains(ch.Rollback.Nodes, nns.Name)) {
			continue
		}
		ran = append(ran, nns.Name)
		ranStates[nns.Name] = nns
		var steps []string
		for _, s := range rep.Steps {
			steps = append(steps, string(s.Action))
		}
		what = append(what, fmt.Sprintf("node %s ran %s", nns.Name, strings.Join(steps, ", ")))
	}
	if len(ran) == 0 {
		return nil
	}
	spec := livechange.FromSpec(cn.Spec)
	c := livechange.Change{Kind: ch.Kind, From: ch.From, To: ch.To, NodeSteps: true}
	plan := &v1alpha1.LiveChangePlan{ID: ch.ID, Kind: ch.Kind, From: ch.From, To: ch.To, Plugin: r.Plugin.Name(), UnderlayMTU: spec.UnderlayMTU,
		Encapsulation: spec.Encapsulation, Steps: livechange.Schedule(c, r.Plugin.Steps(ch.Kind, spec.Encapsulation), r.Spacing)}
	t0 := metav1.NewMicroTime(r.Now().Add(r.pace.lead(r.Lead, len(ran))))
	network := livechange.NodeConfig(*cn.Status.Applied, spec.Encapsulation)
	back := livechange.RollbackPlan(plan, t0, r.Spacing, network, 0)
	for _, n := range ran {
		if err := r.setPlan(ctx, ranStates[n], back.DeepCopy()); err != nil {
			return err
		}
	}
	if ch.Rollback == nil {
		ch.Rollback = &v1alpha1.ChangeRollback{Reason: "steps of the aborted change ran anyway"}
	}
	ch.Rollback.Nodes = livechange.Union(ch.Rollback.Nodes, ran)
	ch.Rollback.T0 = t0
	ch.Converging = livechange.Union(ch.Converging, ran)
	ch.Failed = int32(len(ch.Converging))
	ch.Message = fmt.Sprintf("aborted before T0, yet %s before its agent saw the abort: rolling back live at %s",
		strings.Join(what, "; "), t0.Format("15:04:05.000"))
	log.FromContext(ctx).Info("nodes ran steps of an aborted change: rolling them back", "change", ch.ID, "nodes", ran)
	return nil
}
