package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
)

// liveChange runs the node's part of a live change: preconditions first
// (touching nothing), then, once the operator has set T0, every step at its
// offset from T0. It reports after the preconditions and after each step.
func (a *Agent) liveChange(ctx context.Context, nns *v1alpha1.NetshiftNodeState, plan *v1alpha1.LiveChangePlan) (ctrl.Result, error) {
	rep := nns.Status.LiveChange
	logger := log.FromContext(ctx).WithValues("node", a.Node, "change", plan.ID)
	if a.reported.stale(plan.ID, rep, time.Now()) {
		// The cache has not caught up with this agent's own report yet: look again soon.
		return ctrl.Result{RequeueAfter: staleLook}, nil
	}
	seen := a.reported.firstSeen(plan.ID, a.now())
	if (rep == nil || rep.ID != plan.ID) && plan.Rollback {
		// A rollback puts back the values the node had: nothing to check first.
		logger.Info("rolling back the change's steps", "t0", plan.T0)
		err := a.report(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.LiveChange = &v1alpha1.LiveChangeReport{ID: plan.ID, Ready: true}
		})
		if err == nil {
			a.reported.answer(plan.ID)
		}
		return ctrl.Result{}, err
	}
	if rep == nil || rep.ID != plan.ID {
		checking, withdrawn := a.whilePlanned(ctx, plan.ID)
		r := a.preconditions(checking, plan)
		if withdrawn() {
			a.reported.withdrawnDuringCheck()
			logger.Info("plan withdrawn while its preconditions were checked; not answering it")
			return ctrl.Result{}, nil
		}
		if !seen.IsZero() {
			r.PlanReachedMs = livechange.PlanReached(plan.WrittenAt, seen, a.startedAt, r.ClockOffsetMicros)
		}
		logger.Info("preconditions checked", "ready", r.Ready, "problems", r.Problems, "warnings", r.Warnings)
		err := a.report(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) { s.LiveChange = &r })
		if err == nil {
			a.reported.answer(plan.ID)
		}
		return ctrl.Result{}, err
	}
	// A node whose step failed is left as its steps left it, for the operator to roll back.
	if rep.Done && !rep.Failed && a.unsettled(plan) {
		return a.settle(ctx, plan)
	}
	if plan.T0 == nil || rep.Done || !rep.Ready {
		return ctrl.Result{}, nil
	}
	done, take, err := a.stepsTaken(ctx, nns, plan, rep)
	if !take || err != nil {
		return ctrl.Result{}, err
	}
	// Steps close together are reported together, after the last of them: a
	// report is a write that every watcher of the node's state answers, and
	// the CPU that costs is taken from the datapaths in the very moments the
	// change must not disturb. A failed step ends the node's part at once: the
	// steps after it are not run, and the operator decides what follows
	// (spec.onFailure), for this node and the others.
	var unreported []v1alpha1.StepResult
	held := a.stepsLock(plan)
	defer held.release()
	for i, step := range plan.Steps {
		if done[step.Action] {
			continue
		}
		res, withdrawn, err := a.stepAtItsTime(ctx, plan, step, held)
		if err != nil || withdrawn {
			held.release()
			return ctrl.Result{}, errors.Join(err, a.reportSteps(ctx, nns, plan.ID, unreported, false))
		}
		unreported = append(unreported, res)
		if res.Error != "" {
			held.release()
			logger.Info("a step failed; the steps after it are not run", "step", step.Action)
			return ctrl.Result{}, a.reportSteps(ctx, nns, plan.ID, unreported, true)
		}
		// Never under the lock: a write can take seconds on a busy API server, and the node's pods wait.
		if next := nextStepAfter(plan, i, done); next != nil && next.Sub(a.now()) > reportBatchWindow && !held.holding() {
			if err := a.reportSteps(ctx, nns, plan.ID, unreported, false); err != nil {
				return ctrl.Result{}, err
			}
			unreported = nil
		}
	}
	held.release() // not across the report's write
	a.doneAt[plan.ID] = a.now()
	a.awaitReportTurn(ctx, plan)
	if ctx.Err() != nil {
		// The agent is stopping during its wait: what the steps did is written before it goes,
		// or its next start would run them again.
		stopping, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportWhenStopping)
		defer cancel()
		ctx = stopping
	}
	return ctrl.Result{RequeueAfter: settleDelay}, a.reportSteps(ctx, nns, plan.ID, unreported, true)
}

// stepsTaken are the steps of plan the node reported (a restarted agent
// does not repeat them), and whether it takes the others: before its first,
// beforeFirstStep says.
func (a *Agent) stepsTaken(ctx context.Context, nns *v1alpha1.NetshiftNodeState, plan *v1alpha1.LiveChangePlan,
	rep *v1alpha1.LiveChangeReport) (done map[v1alpha1.StepAction]bool, take bool, err error) {
	done = map[v1alpha1.StepAction]bool{}
	for _, s := range rep.Steps {
		done[s.Action] = true
	}
	if len(done) > 0 {
		return done, true, nil
	}
	take, err = a.beforeFirstStep(ctx, nns, plan)
	return done, take, err
}

// beforeFirstStep says whether the node takes its first step of plan: an
// agent restarted since it answered measures its clock again (a problem is
// answered, and no step run), and every agent confirms past its cache that
// the cluster's plan still stands.
func (a *Agent) beforeFirstStep(ctx context.Context, nns *v1alpha1.NetshiftNodeState, plan *v1alpha1.LiveChangePlan) (bool, error) {
	logger := log.FromContext(ctx).WithValues("node", a.Node, "change", plan.ID)
	if !a.reported.answeredHere(plan.ID) {
		if problem := a.clockStillAgrees(ctx, plan); problem != "" {
			logger.Info("the node's clock no longer agrees with the operator's: no step is run", "problem", problem)
			return false, a.reportDone(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
				if s.LiveChange != nil && s.LiveChange.ID == plan.ID && len(s.LiveChange.Steps) == 0 {
					s.LiveChange.Ready, s.LiveChange.Problems = false, append(s.LiveChange.Problems, problem)
				}
			})
		}
		a.reported.answer(plan.ID)
	}
	standing, err := a.confirmStanding(ctx, plan)
	if err == nil && !standing {
		logger.Info("the plan was withdrawn before T0 (read past the cache): no step is run")
	}
	return standing, err
}

// confirmStanding reads the cluster's plan past the agent's cache at the
// node's moment in the plan's confirm window before T0, and says whether it
// still stands (the same change, the same T0). An abort is accepted only
// before that window, so a watch that brings the abort late cannot make the
// node run a step of it. With no answer it asks again until one comes: a
// step run late is caught up with, a step of an aborted change would split
// the node from the others. A node's own plan (a rollback, a late node's
// copy, a catch-up) cannot be aborted, and has no window.
func (a *Agent) confirmStanding(ctx context.Context, plan *v1alpha1.LiveChangePlan) (bool, error) {
	window := time.Duration(plan.ConfirmWindowMs) * time.Millisecond
	if window <= 0 || plan.Rollback || plan.T0 == nil || a.reader == nil {
		return true, nil
	}
	at := plan.T0.Add(-window).Add(a.turn(max(window-confirmBeforeT0, time.Millisecond)))
	if wait := at.Sub(a.now()); wait > 0 && !pause(ctx, wait) {
		return false, ctx.Err()
	}
	logger := log.FromContext(ctx).WithValues("node", a.Node, "change", plan.ID)
	for try := 0; ; try++ {
		var cp v1alpha1.NetshiftChangePlan
		rctx, cancel := context.WithTimeout(ctx, confirmTimeout)
		err := a.reader.Get(rctx, types.NamespacedName{Name: v1alpha1.NetshiftChangePlanName}, &cp)
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err == nil:
			return cp.Spec.ID == plan.ID && cp.Spec.T0 != nil && cp.Spec.T0.Equal(plan.T0) && !slices.Contains(cp.Spec.Without, a.Node), nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		}
		if try == 0 || try%10 == 0 {
			logger.Info("cannot confirm the plan before its first step; asking again (the steps wait)", "error", err.Error())
		}
		if !pause(ctx, confirmRetry) {
			return false, ctx.Err()
		}
	}
}

// clockStillAgrees measures the node's clock again, for an agent restarted
// after its node answered a plan whose T0 is still ahead: it says why the
// node cannot take its steps at T0 ("" when it can, or when there is no time
// to tell before the plan's confirm window: a clock that cannot be measured
// then is no reason to split the node from the others).
func (a *Agent) clockStillAgrees(ctx context.Context, plan *v1alpha1.LiveChangePlan) string {
	if plan.T0 == nil || plan.Rollback {
		return ""
	}
	by := plan.T0.Add(-time.Duration(plan.ConfirmWindowMs)*time.Millisecond - confirmBeforeT0)
	if !by.After(a.now()) {
		return ""
	}
	timeURL := a.timeURL(plan.TimeURL)
	if timeURL == "" {
		return ""
	}
	checking, cancel := context.WithDeadline(ctx, time.Now().Add(by.Sub(a.now())))
	defer cancel()
	client := newClockClient()
	defer client.CloseIdleConnections()
	samples, err := measureClock(checking, client, timeURL, 5, a.now)
	if err != nil || len(samples) == 0 {
		return ""
	}
	offset, bound, err := EstimateOffset(samples)
	if err != nil || judgeClock(offset, bound, a.MaxClockSkew) != clockOff {
		return ""
	}
	return fmt.Sprintf("restarted after answering, the node's clock now differs from the operator's by %s (± %s), more than the %s allowed: T0 would not be the same instant here",
		offset.Round(time.Microsecond), bound.Round(time.Microsecond), a.MaxClockSkew)
}

// The confirming read: it ends confirmBeforeT0 before T0 at the latest,
// each try waits confirmTimeout for its answer, and a failed try is made
// again confirmRetry later.
const (
	confirmBeforeT0 = 50 * time.Millisecond
	confirmTimeout  = 2 * time.Second
	confirmRetry    = 200 * time.Millisecond
)

// reportWhenStopping is how long an agent stopping before its report's turn
// tries to write it.
const reportWhenStopping = 5 * time.Second

// awaitReportTurn waits for the node's moment in the plan's report spread,
// so that a cluster's agents, whose steps all ran at T0, do not write their
// reports at once. A plan withdrawn or replaced meanwhile (a rollback) ends
// the wait: what the steps did is reported before anything else. The pods set
// up just before the last step are aligned meanwhile, when they would have
// been without the wait.
func (a *Agent) awaitReportTurn(ctx context.Context, plan *v1alpha1.LiveChangePlan) {
	spread := time.Duration(plan.ReportSpreadMs) * time.Millisecond
	if spread <= 0 {
		return
	}
	watched, withdrawn := a.whilePlanned(ctx, plan.ID)
	defer withdrawn()
	turn := a.turn(spread)
	if turn > settleDelay && a.unsettled(plan) {
		if !pause(watched, settleDelay) {
			return
		}
		if err := a.settleNow(watched, plan); err != nil {
			log.FromContext(ctx).Error(err, "pods not aligned after the change; they are when its report is written", "node", a.Node, "change", plan.ID)
		}
		turn -= settleDelay
	}
	pause(watched, turn)
}

// turn is the node's moment in a window of spread that every agent of the
// cluster entered at once, drawn at random.
func (a *Agent) turn(spread time.Duration) time.Duration {
	if a.drawTurn != nil {
		return a.drawTurn(spread)
	}
	return rand.N(spread)
}

// pause waits d, or less if ctx ends first; it says whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reportBatchWindow is how far the next step may be for the steps run so far
// to wait for it before they are reported.
const reportBatchWindow = time.Second

// staleLook is how soon the agent looks again at a state its cache shows
// older than its own latest report.
const staleLook = 500 * time.Millisecond

// nextStepAfter is the time of the first step after the i-th that is still
// to run, or nil when there is none.
func nextStepAfter(plan *v1alpha1.LiveChangePlan, i int, done map[v1alpha1.StepAction]bool) *time.Time {
	for _, s := range plan.Steps[i+1:] {
		if !done[s.Action] {
			at := plan.T0.Add(time.Duration(s.OffsetMs) * time.Millisecond)
			return &at
		}
	}
	return nil
}

// reportSteps reports step results in one write, and the node's part of the
// change done when done is set, with the network the node has then. A failed
// step marks the change failed.
func (a *Agent) reportSteps(ctx context.Context, nns *v1alpha1.NetshiftNodeState, id string, results []v1alpha1.StepResult, done bool) error {
	if len(results) == 0 && !done {
		return nil
	}
	// Done, the node reports its network with its steps: looked at again once
	// the plan goes, it would differ from the last report by the change, one
	// more write for every node of the cluster.
	var seen *v1alpha1.ObservedNetwork
	if done {
		o := a.observe(ctx)
		seen = &o
	}
	err := a.reportDone(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
		if s.LiveChange == nil || s.LiveChange.ID != id {
			return // the report was replaced meanwhile: nothing of this change to add to
		}
		for _, r := range results {
			if reportHas(s.LiveChange, r.Action) {
				continue // written by an earlier try whose answer was lost
			}
			s.LiveChange.Steps = append(s.LiveChange.Steps, r)
			if r.Error != "" {
				s.LiveChange.Failed = true
			}
		}
		if done {
			s.LiveChange.Done = true
			if !s.LiveChange.Failed {
				s.Network = seen // a failed node is rolled back: its network is looked at after
			}
		}
	})
	if err == nil {
		a.reported.ran(id, results, done)
	}
	return err
}

// whilePlanned is ctx, cancelled once the node's plan is no longer change id
// (withdrawn, or replaced by a new attempt): the preconditions can wait long
// for an operator that restarts, and a withdrawn plan must not hold the
// agent from the next one. withdrawn ends the watch and says whether it
// was withdrawn.
func (a *Agent) whilePlanned(ctx context.Context, id string) (watched context.Context, withdrawn func() bool) {
	watched, cancel := context.WithCancel(ctx)
	var gone atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		look := planLookFirst
		for {
			select {
			case <-watched.Done():
				return
			case <-time.After(look):
			}
			look = min(2*look, planLookMost)
			plan, err := a.freshPlan(watched)
			if (err == nil && (plan == nil || plan.ID != id)) || apierrors.IsNotFound(err) {
				gone.Store(true)
				cancel()
				return
			}
		}
	}()
	return watched, func() bool {
		cancel()
		<-done
		return gone.Load()
	}
}

// A long precondition check looks whether its plan is still wanted (from the
// agent's cache: no request to the API server) planLookFirst after it began,
// then twice as long after each look, at most planLookMost apart: a check
// that waits for an operator's time endpoint can wait 90 s, yet most wait
// only their moment in the cluster's clock spread, seconds in which
// thousands of agents of a cluster would otherwise each look every second.
const (
	planLookFirst = time.Second
	planLookMost  = 4 * time.Second
)

// stepAtItsTime waits for the step's time and runs it, unless the plan was
// withdrawn meanwhile (an abort before T0). Everything the step needs is
// built before its time, so that at its time it only sends (one OVSDB
// transaction for the tunnel port, netlink requests on open handles). The
// configuration's lock (held) is taken in the final approach, before the
// step's time.
func (a *Agent) stepAtItsTime(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep, held *stepsLock) (res v1alpha1.StepResult, withdrawn bool, err error) {
	logger := log.FromContext(ctx).WithValues("node", a.Node, "change", plan.ID)
	at := plan.T0.Add(time.Duration(step.OffsetMs) * time.Millisecond)
	armed := a.armStep(ctx, plan, step)
	defer armed.Release()
	if err := a.host().Approach(ctx, at); err != nil {
		return res, false, err
	}
	// The last look at the plan, from the cache, before the final approach:
	// a plan withdrawn later than this runs its step (the operator refuses an abort so close to T0).
	fresh, err := a.freshPlan(ctx)
	if err != nil {
		return res, false, fmt.Errorf("node %s: read the plan before step %s: %w", a.Node, step.Action, err)
	}
	if fresh == nil || fresh.ID != plan.ID || fresh.T0 == nil || !fresh.T0.Equal(plan.T0) {
		logger.Info("plan withdrawn before its step; stopping", "step", step.Action)
		return res, true, nil
	}
	stepCtx, err := held.hold(ctx)
	if err != nil {
		return res, false, fmt.Errorf("node %s: before step %s: %w", a.Node, step.Action, err)
	}
	run, err := a.host().RunAt(stepCtx, at, armed.Fire)
	if run.Began.IsZero() {
		return res, false, fmt.Errorf("node %s: wait for step %s: %w", a.Node, step.Action, err)
	}
	outcome, priority := run.Outcome, run.Priority
	res = stepResult(step, at, run.Began, run.Ended, outcome)
	if err != nil {
		res.Error = err.Error()
		logger.Error(err, "step failed", "step", step.Action)
	} else {
		logger.Info("step done", "step", step.Action, "value", step.Value, "lateMicros", res.LateMicros, "tookMs", res.TookMs, "waitedMicros", res.WaitedMicros,
			"changed", res.Changed, "skipped", outcome.Skipped, "priority", priority)
	}
	return res, false, nil
}

// stepResult is the report of a step scheduled at at, run from began to ended.
func stepResult(step v1alpha1.ScheduledStep, at, began, ended time.Time, o netplugin.Outcome) v1alpha1.StepResult {
	res := v1alpha1.StepResult{Action: step.Action, At: metav1.NewMicroTime(began),
		ScheduledAt: ptr.To(metav1.NewMicroTime(at)), EndedAt: ptr.To(metav1.NewMicroTime(ended)),
		LateMicros: began.Sub(at).Microseconds(), LateMs: int32(began.Sub(at).Milliseconds()), TookMs: int32(ended.Sub(began).Milliseconds()),
		WaitedMicros: o.Waited.Microseconds(), Changed: int32(o.Changed), Skipped: o.Report()}
	if !o.Committed.IsZero() {
		res.CommittedAt = ptr.To(metav1.NewMicroTime(o.Committed))
	}
	return res
}

// armStep prepares a step through the network plugin's driver; netshift's
// own configuration step, and a step a test makes fail, run whole at their time.
func (a *Agent) armStep(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) netplugin.Armed {
	if a.failSteps[step.Action] > 0 || step.Action == v1alpha1.StepNetworkConfig {
		return netplugin.Whole(func(ctx context.Context) (netplugin.Outcome, error) { return a.runStep(ctx, plan, step) })
	}
	armed, err := a.Plugin.Arm(ctx, plan, step)
	if err != nil {
		return netplugin.Whole(func(context.Context) (netplugin.Outcome, error) { return netplugin.Outcome{}, err })
	}
	return armed
}

// settleDelay is how long after its last step the agent aligns the node's
// pods once more. The runtime lists a sandbox only once its container runs,
// tens of milliseconds after netshift-cni set it up: a pod set up with the old
// configuration just before the rewrite can be missing from the step's list.
const settleDelay = 2 * time.Second

// settle aligns, once, the pods the change's last step could not see yet.
func (a *Agent) settle(ctx context.Context, plan *v1alpha1.LiveChangePlan) (ctrl.Result, error) {
	if at, ok := a.doneAt[plan.ID]; ok {
		if wait := settleDelay - a.now().Sub(at); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	return ctrl.Result{}, a.settleNow(ctx, plan)
}

// unsettled says whether the node's pods are still to be aligned once after plan's steps: on a
// node whose pods are set up from netshift's configuration, by a plan that writes it.
func (a *Agent) unsettled(plan *v1alpha1.LiveChangePlan) bool {
	return plan.Network != nil && a.config() != nil && !a.settled[plan.ID]
}

func (a *Agent) settleNow(ctx context.Context, plan *v1alpha1.LiveChangePlan) error {
	unlock, err := a.lockConfig(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	o, err := a.Plugin.Align(ctx, int(plan.Network.MTU))
	if err != nil {
		return err
	}
	a.settled[plan.ID] = true
	log.FromContext(ctx).Info("pods aligned after the change", "node", a.Node, "change", plan.ID, "changed", o.Changed, "skipped", o.Skipped)
	return nil
}

// alignAfterBoot aligns the node's pods to mtu under the configuration's lock.
func (a *Agent) alignAfterBoot(ctx context.Context, mtu int) error {
	unlock, err := a.lockConfig(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = a.Plugin.Align(ctx, mtu)
	return err
}

// carries reads back that the node carries network: what the plugin's
// driver set, and the node's network configuration.
func (a *Agent) carries(ctx context.Context, network v1alpha1.NodeNetworkConfig) error {
	if err := a.Plugin.Carries(ctx, network); err != nil {
		return err
	}
	c := a.config()
	if c == nil {
		return nil
	}
	f, err := c.Read()
	if err != nil {
		return err
	}
	if f.NodeNetworkConfig != network {
		return fmt.Errorf("%s holds %+v, want %+v", c.Name(), f.NodeNetworkConfig, network)
	}
	return nil
}

// runStep carries out one step. Every step is idempotent.
func (a *Agent) runStep(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (netplugin.Outcome, error) {
	if a.failSteps[step.Action] > 0 {
		a.failSteps[step.Action]--
		return netplugin.Outcome{}, fmt.Errorf("node %s: %s failed on purpose (a test's fault injection)", a.Node, step.Action)
	}
	if step.Action != v1alpha1.StepNetworkConfig {
		armed, err := a.Plugin.Arm(ctx, plan, step)
		if err != nil {
			return netplugin.Outcome{}, err
		}
		defer armed.Release()
		return armed.Fire(ctx)
	}
	if plan.Network == nil {
		return netplugin.Outcome{}, fmt.Errorf("node %s: the plan of %s carries no network to write", a.Node, plan.ID)
	}
	c := a.config()
	if c == nil {
		// Nothing on this node reads one (no --network-config): the step has nothing to do.
		return netplugin.Outcome{}, nil
	}
	unlock, err := a.lockConfig(ctx)
	if err != nil {
		return netplugin.Outcome{}, err
	}
	defer unlock()
	if err := c.Write(nodeconfig.File{NodeNetworkConfig: *plan.Network, Change: plan.ID}); err != nil {
		return netplugin.Outcome{}, fmt.Errorf("node %s: %w", a.Node, err)
	}
	if plan.Kind != v1alpha1.ChangeMTU {
		return netplugin.Outcome{}, nil // a port change leaves the pods' MTU as it was
	}
	// Pods set up between the MTU steps read the old configuration: give them the new one.
	return a.Plugin.Align(ctx, int(plan.Network.MTU))
}

// preconditions checks, touching nothing, that the node can take the change:
// its clock, what the plugin's driver finds, the underlay for an MTU, the new
// port for a tunnel.
func (a *Agent) preconditions(ctx context.Context, plan *v1alpha1.LiveChangePlan) v1alpha1.LiveChangeReport {
	r := v1alpha1.LiveChangeReport{ID: plan.ID}
	if plan.Plugin != "" && plan.Plugin != a.PluginName {
		r.Problems = append(r.Problems, fmt.Sprintf("the operator planned this change for network plugin %s, and this agent drives %s: give both the same --network-plugin",
			plan.Plugin, a.PluginName))
		return r
	}
	a.checkClock(ctx, &r, plan.TimeURL, time.Duration(plan.ClockSpreadMs)*time.Millisecond)
	f := a.Plugin.Check(ctx, plan)
	switch plan.Kind {
	case v1alpha1.ChangeMTU:
		switch problem, unchecked := a.underlayFits(ctx, plan); {
		case problem != "":
			f.Problems = append(f.Problems, problem)
		case unchecked != "":
			f.Warnings = append(f.Warnings, unchecked)
		}
		if plan.To < netdev.IPv6MinMTU {
			holder, err := a.host().IPv6Holder(ctx)
			if problem := livechange.IPv6Problem(plan.To, holder, err); problem != "" {
				f.Problems = append(f.Problems, problem)
			}
		}
	case v1alpha1.ChangeVXLANPort, v1alpha1.ChangeGenevePort:
		if owner, err := a.host().UDPPortUser(int(plan.To)); err != nil {
			f.Problems = append(f.Problems, "cannot check UDP port use: "+err.Error())
		} else if owner != "" {
			f.Problems = append(f.Problems, fmt.Sprintf("UDP port %d is in use on the node by %s", plan.To, owner))
		}
	}
	if c := a.config(); c != nil {
		f.WouldChange = append(f.WouldChange, "the node's network configuration for new pods: "+c.Name())
	}
	r.Problems = append(r.Problems, f.Problems...)
	r.Warnings = append(r.Warnings, f.Warnings...)
	r.WouldChange = f.WouldChange
	r.Ready = len(r.Problems) == 0
	return r
}

// underlayFits says why the plan's MTU does not fit the node's underlay
// (problem), or why it could not be checked (unchecked: a warning, since a
// node whose underlay cannot be found is no reason to stop a change).
func (a *Agent) underlayFits(ctx context.Context, plan *v1alpha1.LiveChangePlan) (problem, unchecked string) {
	link, err := a.underlayInterface(ctx)
	if err != nil {
		return "", "the underlay's MTU was not checked: " + err.Error()
	}
	mtu, err := a.host().LinkMTU(link)
	if err != nil {
		return "underlay: " + err.Error(), ""
	}
	need := int(plan.To) + int(plan.Encapsulation.Overhead())
	if mtu >= need {
		return "", ""
	}
	declared := ""
	if plan.UnderlayMTU > 0 && int(plan.UnderlayMTU) > mtu {
		declared = fmt.Sprintf(" (NetshiftNetwork spec.underlay.mtu says %d: this node's is smaller)", plan.UnderlayMTU)
	}
	return fmt.Sprintf("MTU %d does not fit the underlay: %s has MTU %d, and %d + %d bytes of %s overhead = %d%s",
		plan.To, link, mtu, plan.To, plan.Encapsulation.Overhead(), plan.Encapsulation, need, declared), ""
}

// udpPortUser says which socket holds a UDP port in the node's namespace
// ("" when free), from the kernel's socket tables.
func udpPortUser(netns string, port int) (string, error) {
	var found string
	err := netdev.InNetns(netns, func() error {
		for _, table := range []string{"/proc/thread-self/net/udp", "/proc/thread-self/net/udp6"} {
			data, err := os.ReadFile(table)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(data), "\n")[1:] {
				f := strings.Fields(line)
				if len(f) < 10 {
					continue
				}
				local := f[1]
				hexPort := local[strings.LastIndexByte(local, ':')+1:]
				if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
					found = fmt.Sprintf("a socket bound to %s (inode %s)", local, f[9])
					return nil
				}
			}
		}
		return nil
	})
	return found, err
}

// clockRetryFor is how long the clock check keeps taking rounds from a time
// endpoint too slow to give a conclusive measurement.
const clockRetryFor = 25 * time.Second

// clockWaitFor is how long it waits for a time endpoint that does not answer
// at all: an operator that died serves again only once its lease expired
// (15 s) and the kubelet restarted it, or another node started it, which on a
// loaded 2-core node took 24 s. Waiting costs the change nothing: a new
// leader counts a silent agent's deadline from its own start.
const clockWaitFor = 90 * time.Second

// checkClock measures the node clock's offset from the operator's: T0 is one
// instant on every node only if their clocks agree within MaxClockSkew.
//
// The endpoint is the agent's own --operator-time-url, or else the one the
// elected operator advertises in the plan.
func (a *Agent) checkClock(ctx context.Context, r *v1alpha1.LiveChangeReport, advertised string, spread time.Duration) {
	if synced, err := a.host().ClockSynced(); err == nil && !synced {
		r.Warnings = append(r.Warnings, "the kernel reports its clock as not synchronized (NTP)")
	}
	timeURL := a.timeURL(advertised)
	if timeURL == "" {
		r.Warnings = append(r.Warnings, "clock not checked against the operator's (no --operator-time-url, and the operator advertises no time endpoint)")
		return
	}
	// The endpoint is the leader's: right after an operator restart it is down until the new
	// leader is elected (a lease term), so an unreachable endpoint is tried again before it
	// counts as a problem. Every agent checks at once when a plan arrives, so on a busy
	// control plane the first round trips can be too slow to tell: more rounds are taken,
	// spread out, and every round trip narrows the estimate (EstimateOffset).
	var samples []ClockSample
	var lastErr error
	if spread > 0 {
		// Every agent of the cluster got the plan at once: each starts at its own moment.
		pause(ctx, a.turn(spread))
	}
	client := newClockClient()
	defer client.CloseIdleConnections()
	start := time.Now()
	for tries := 0; ; tries++ {
		round, err := measureClock(ctx, client, timeURL, 5, a.now)
		lastErr = err
		if err != nil {
			// The endpoint may come back on another operator, whose clock the earlier round trips did not read.
			samples = nil
		}
		samples = append(samples, round...)
		if len(samples) > 0 {
			offset, bound, err := EstimateOffset(samples)
			if err != nil {
				// A clock stepped, or another operator answers: start again from this round.
				samples = round
			} else if judgeClock(offset, bound, a.MaxClockSkew) != clockInconclusive {
				break
			}
		}
		waited := time.Since(start)
		if (len(samples) > 0 && waited >= clockRetryFor) || waited >= clockWaitFor || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(clockRetryPause(tries)):
		case <-ctx.Done():
		}
	}
	if len(samples) == 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("cannot check the clock (no answer for %s): %v", clockWaitFor, lastErr))
		return
	}
	offset, bound, err := EstimateOffset(samples)
	if err != nil {
		r.Problems = append(r.Problems, "cannot check the clock: "+err.Error())
		return
	}
	us := offset.Microseconds()
	r.ClockOffsetMicros = &us
	switch judgeClock(offset, bound, a.MaxClockSkew) {
	case clockOff:
		r.Problems = append(r.Problems, fmt.Sprintf("the node's clock differs from the operator's by %s (± %s), more than the %s allowed: T0 would not be the same instant here",
			offset.Round(time.Microsecond), bound.Round(time.Microsecond), a.MaxClockSkew))
	case clockInconclusive:
		r.Problems = append(r.Problems, fmt.Sprintf("the node's clock differs from the operator's by %s (± %s): the round trips to the operator's time endpoint stayed too slow for %s to tell whether it is within the %s allowed",
			offset.Round(time.Microsecond), bound.Round(time.Microsecond), clockRetryFor, a.MaxClockSkew))
	}
}

// timeURL is the time endpoint the clock is checked against: the agent's own
// --operator-time-url, or else the one the elected operator advertises.
func (a *Agent) timeURL(advertised string) string {
	if a.OperatorTimeURL != "" {
		return a.OperatorTimeURL
	}
	return advertised
}

// clockRetryPause is how long an agent waits after its round-th round that
// could not tell: between half and all of 0.4 s doubled each round, at most
// 4 s. Every agent of the cluster checks when the plan comes, and a busy time
// endpoint answers slowly: the rounds of those that could not tell thin out
// and spread, and the quieter moments between them give fast round trips.
func clockRetryPause(round int) time.Duration {
	ceiling := min(400*time.Millisecond<<min(round, 4), 4*time.Second)
	return ceiling/2 + rand.N(ceiling/2)
}
