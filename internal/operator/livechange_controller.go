package operator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netplugin"
)

// AbortAnnotation on NetshiftNetwork asks to abort the change it names (`netshift abort`).
const AbortAnnotation = "netshift.io/abort"

// abortMargin is what T0's lead keeps beyond the abort's deadline
// (livechange.AbortDeadline): time for the agents to see T0 at all.
const abortMargin = 500 * time.Millisecond

// Condition types of NetshiftNetwork (api/v1alpha1 defines them).
const (
	CondProgressing = v1alpha1.NetshiftNetworkProgressing
	CondDegraded    = v1alpha1.NetshiftNetworkDegraded
	CondUpgradeable = v1alpha1.NetshiftNetworkUpgradeable
	CondAvailable   = v1alpha1.NetshiftNetworkAvailable
)

// LiveChangeReconciler carries out live MTU and tunnel port changes: it
// records the change in the first reconcile after the edit, writes the
// cluster's plan (the NetshiftChangePlan) for every agent to check its
// preconditions, then sets T0 a lead time ahead and the steps in that plan
// (no node is cordoned), and records the result. A node gets a
// plan of its own only for a rollback, or when it is left behind.
type LiveChangeReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Now       func() time.Time
	// Lead is how far ahead of "now" T0 is set: enough for every agent to see its schedule.
	// A rollback's T0 adds what writing its nodes' plans takes (see writePace.lead).
	Lead time.Duration
	// Spacing is the time between a node's steps.
	Spacing time.Duration
	// AgentWriteSpacing is the time a node over which the agents spread their answers to the
	// plan and their steps' reports, so together they send the API server no more writes a
	// second than it serves (zero: livechange.DefaultAgentWriteSpacing).
	AgentWriteSpacing time.Duration
	// RetryAfter is how long after failed preconditions a change is tried again.
	RetryAfter time.Duration
	// Ledger serializes the change's holds with the drains' and the zone moves'.
	Ledger *Ledger
	// Plugin is the network plugin's driver: which steps a change has on the nodes, and where
	// the cluster, rather than its nodes, holds a tunnel port (set by this controller at T0).
	Plugin netplugin.Cluster
	// AnswerTimeout is how long the change waits for an agent's preconditions (from the start)
	// and for its step report (from T0).
	AnswerTimeout time.Duration
	// SouthboundResync is how often the cluster's record of the tunnel port is checked with no
	// change in progress.
	SouthboundResync time.Duration
	// TimeURL is this operator's /time endpoint as agents reach it, given to them in their plans.
	TimeURL string
	// Placement says which nodes run the agent: a change is for no other node.
	Placement *AgentPlacement
	// heardAt is when this reconciler last read the NetshiftNetwork: a control plane away for
	// longer than heardGap is time no agent could be heard in.
	heardAt time.Time
	// listening is when this reconciler first ran (as the leader).
	listening time.Time
	// waitingFor is why the NetshiftNetwork was last not created, logged once each.
	waitingFor string
	// followed is the applied network the plugin's configuration was last made to carry, at
	// followedAt; nil with a time: the last try failed (tried again a resync later).
	followed   *v1alpha1.AppliedNetwork
	followedAt time.Time
	// pace is how long a per-node write takes, measured as a rollback's plans are written: the
	// next rollback's T0 lead grows with it (see writePace.lead).
	pace writePace
	// planned are the plans this process wrote that its cache may not show yet, by node: a
	// pass reads the nodes' states from the cache, and must not write a plan twice, nor miss
	// one when it removes them.
	planned sync.Map // node name -> plannedAs
	// plansSent is when this process last wrote the cluster's plan of a change, by change ID.
	plansSent sync.Map // change ID -> time.Time
	// answers is when the nodes' answers to the change last grew in number.
	answers answerClock
	// passes spaces the passes (see passPacer).
	passes passPacer
	// sweptAt is when sweepClusterPlan last looked.
	sweptAt time.Time
}

// plannedAs is the plan written to a node's state, and which state (a state deleted and
// made again is another, to be planned again).
type plannedAs struct {
	ID  string
	UID types.UID
}

// wrote says whether this process wrote plan id into nns (whatever the cache shows of it).
func (r *LiveChangeReconciler) wrote(nns *v1alpha1.NetshiftNodeState, id string) bool {
	p, ok := r.planned.Load(nns.Name)
	return ok && p.(plannedAs) == plannedAs{ID: id, UID: nns.UID}
}

var clusterKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}}

func (r *LiveChangeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toCluster := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("livechange").
		For(&v1alpha1.NetshiftNetwork{}).
		Watches(&v1alpha1.NetshiftNodeState{}, toCluster).
		Complete(r)
}

func (r *LiveChangeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != v1alpha1.NetshiftNetworkName {
		return ctrl.Result{}, nil
	}
	// Every node's report is an event, and a pass reads every node.
	if wait := r.passes.wait(); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	began := time.Now()
	defer r.passes.ran(began)
	if r.listening.IsZero() {
		r.listening = r.Now()
	}
	var cn v1alpha1.NetshiftNetwork
	if err := r.APIReader.Get(ctx, req.NamespacedName, &cn); apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.createFromNodes(ctx)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	r.heard(ctx)
	before := cn.DeepCopy()
	wanted := livechange.FromSpec(cn.Spec)
	st := &cn.Status
	var requeue time.Duration
	switch {
	case st.Applied == nil:
		// First sight: what the nodes carry is what is applied, whatever the spec asks.
		var err error
		if requeue, err = r.firstSight(ctx, wanted, st); err != nil {
			return ctrl.Result{}, err
		}
	case st.Change != nil && st.Change.Phase.Active():
		var err error
		if requeue, err = r.advance(ctx, &cn); apierrors.IsConflict(err) {
			// A state changed under a write (an agent's report): the next pass reads it again.
			log.FromContext(ctx).V(1).Info("a write of the change met a newer state; looking again", "error", err.Error())
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		} else if err != nil {
			return ctrl.Result{}, err
		}
	case st.Change != nil && (len(st.Change.Converging) > 0 || len(st.Change.Held) > 0 || len(st.Change.Rebooting) > 0):
		if err := r.converge(ctx, cn.Spec, st); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.catchUp(ctx, &cn); err != nil {
			return ctrl.Result{}, err
		}
		if len(st.Change.Down) > 0 {
			requeue = catchUpLook
		}
	default:
		var err error
		if requeue, err = r.between(ctx, &cn, wanted); err != nil {
			return ctrl.Result{}, err
		}
	}
	if st.Change == nil || !st.Change.Phase.Active() {
		requeue = r.keepSouthbound(ctx, &cn, requeue)
		requeue = r.followPlugin(ctx, &cn, requeue)
		if err := r.sweepClusterPlan(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.setConditions(&cn)
	if !equalStatus(before.Status, cn.Status) {
		if err := r.Client.Status().Patch(ctx, &cn, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: 20 * time.Millisecond}, nil
			}
			return ctrl.Result{}, fmt.Errorf("NetshiftNetwork %s: write status: %w", cn.Name, err)
		}
	}
	r.heardAt = r.Now() // a long pass is time the agents were heard
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// between looks after the cluster between changes: the steps an aborted
// change ran anyway are rolled back, nodes that were down catch up, and the
// next change (or dry run) the spec asks for starts.
func (r *LiveChangeReconciler) between(ctx context.Context, cn *v1alpha1.NetshiftNetwork, wanted livechange.Wanted) (time.Duration, error) {
	st := &cn.Status
	if err := r.revertAfterAbort(ctx, cn); err != nil {
		return 0, err
	}
	if err := r.catchUp(ctx, cn); err != nil {
		return 0, err
	}
	var requeue time.Duration
	if st.Change != nil && len(st.Change.Down) > 0 {
		requeue = catchUpLook
	}
	if ch := st.Change; ch != nil && (len(ch.Converging) > 0 || len(ch.Held) > 0) {
		// An aborted change's steps that ran anyway are rolled back first; a node that could not
		// catch up is held for a person, as the change's own failed nodes would be.
		return requeue, nil
	}
	if c, ok := livechange.DryRun(cn.Spec, cn.Generation, *st.Applied, st.Change); ok {
		return r.startDryRun(ctx, cn, c), nil
	}
	c, ok := livechange.Next(wanted, *st.Applied)
	if !ok {
		return requeue, nil
	}
	attempt, wait, start := livechange.NextAttempt(st.Change, c, cn.Generation, st.ObservedGeneration, r.Now())
	if !start {
		return wait, nil
	}
	return r.startChange(ctx, cn, c, attempt), nil
}

// startChange records change c, attempt attempt: in its preconditions, or
// done at once for a port of an encapsulation the cluster does not use.
func (r *LiveChangeReconciler) startChange(ctx context.Context, cn *v1alpha1.NetshiftNetwork, c livechange.Change, attempt int32) time.Duration {
	st := &cn.Status
	id := changeID(c.Kind, cn.Generation, attempt, false)
	log.FromContext(ctx).Info("live change requested", "change", id, "from", c.From, "to", c.To)
	if !c.NodeSteps {
		applied := c.Apply(*st.Applied)
		st.Applied = &applied
		st.Change = &v1alpha1.NetworkChange{ID: id, Kind: c.Kind, From: c.From, To: c.To, Phase: v1alpha1.PhaseSucceeded, Generation: cn.Generation,
			Message: fmt.Sprintf("recorded; the cluster uses %s, so no node changes", livechange.FromSpec(cn.Spec).Encapsulation), Down: downOf(st.Change)}
		return 0
	}
	started := metav1.NewTime(r.Now())
	st.Change = &v1alpha1.NetworkChange{ID: id, Kind: c.Kind, From: c.From, To: c.To, Phase: v1alpha1.PhasePreconditions,
		Message: "checking preconditions on every node", Attempt: attempt, StartedAt: &started, Generation: cn.Generation,
		Steps: r.stepsOf(cn, c), Down: downOf(st.Change)}
	return 100 * time.Millisecond
}

// downOf are the nodes the last change left down, still to catch up: the
// next change goes ahead without them too.
func downOf(last *v1alpha1.NetworkChange) []string {
	if last == nil {
		return nil
	}
	return slices.Clone(last.Down)
}

// createFromNodes creates the NetshiftNetwork from what every node's agent
// reports, once they agree; until then it says (once each) what it waits for.
func (r *LiveChangeReconciler) createFromNodes(ctx context.Context) error {
	// From the manager's cache: this runs at every node's report until the network exists,
	// and a cluster of thousands of nodes must not be listed from the API server each time.
	reports, err := r.networkReports(ctx)
	if err != nil {
		return err
	}
	spec, why := livechange.FromNodes(reports)
	logger := log.FromContext(ctx)
	if spec == nil {
		if why != r.waitingFor {
			logger.Info("NetshiftNetwork not created yet", "why", why)
			r.waitingFor = why
		}
		return nil
	}
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}, Spec: *spec}
	if err := r.Client.Create(ctx, cn); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create NetshiftNetwork %s from the nodes' reports: %w", cn.Name, err)
	}
	logger.Info("NetshiftNetwork created from the nodes' reports", "mtu", *spec.MTU, "encapsulation", spec.Encapsulation,
		"vxlanPort", spec.VXLANPort, "genevePort", spec.GenevePort, "underlayMTU", spec.Underlay.MTU)
	r.waitingFor = ""
	return nil
}

// firstSight sets status.applied from what the nodes report they carry (the
// spec's values where none can tell); while the nodes disagree it waits.
func (r *LiveChangeReconciler) firstSight(ctx context.Context, wanted livechange.Wanted, st *v1alpha1.NetshiftNetworkStatus) (time.Duration, error) {
	reports, err := r.networkReports(ctx)
	if err != nil {
		return 0, err
	}
	applied, why, ok := livechange.InitialApplied(wanted, reports)
	if !ok {
		if why != r.waitingFor {
			log.FromContext(ctx).Info("status.applied not set yet", "why", why)
			r.waitingFor = why
		}
		return firstSightRetry, nil
	}
	r.waitingFor = ""
	st.Applied = &applied
	log.FromContext(ctx).Info("status.applied set from the nodes' reports", "mtu", applied.MTU, "vxlanPort", applied.VXLANPort, "genevePort", applied.GenevePort)
	return 0, nil
}

// firstSightRetry is how often a NetshiftNetwork whose nodes disagree is
// looked at again (their reports also wake it).
const firstSightRetry = 30 * time.Second

// networkReports are the reports (status.network) of the nodes that run an
// agent, nil for one that has not reported; read from the manager's cache.
func (r *LiveChangeReconciler) networkReports(ctx context.Context) (map[string]*v1alpha1.ObservedNetwork, error) {
	var nodes corev1.NodeList
	var states v1alpha1.NetshiftNodeStateList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	if err := r.Client.List(ctx, &states); err != nil {
		return nil, err
	}
	reports := map[string]*v1alpha1.ObservedNetwork{}
	for _, n := range nodes.Items {
		if reportsItsNetwork(n) {
			reports[n.Name] = nil
		}
	}
	for i := range states.Items {
		if _, ok := reports[states.Items[i].Name]; ok {
			reports[states.Items[i].Name] = states.Items[i].Status.Network
		}
	}
	return reports, nil
}

// reportsItsNetwork says whether the NetshiftNetwork waits for the node's
// report: a Ready Linux node runs an agent; one that is down, or runs none
// (Windows), would keep the network from ever being created.
func reportsItsNetwork(n corev1.Node) bool {
	if os := n.Labels[corev1.LabelOSStable]; os != "" && os != "linux" {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// changeID names a change's attempt (a dry run's first has no number, as
// before attempts were counted for it).
func changeID(kind v1alpha1.ChangeKind, generation int64, attempt int32, dryRun bool) string {
	k := strings.ToLower(string(kind))
	switch {
	case !dryRun:
		return fmt.Sprintf("%s-%d-%d", k, generation, attempt)
	case attempt > 1:
		return fmt.Sprintf("dryrun-%s-%d-%d", k, generation, attempt)
	}
	return fmt.Sprintf("dryrun-%s-%d", k, generation)
}

// againUnderThisLeader starts the next attempt of change ch, before T0, when
// its plan names another operator's time endpoint: one that led before this
// one was elected. The agents that answered measured their clocks against
// that operator's, and those still measuring wait for an endpoint that no
// longer serves (only the leader serves it); T0 is set on this one's clock.
// A new plan, with this operator's endpoint, has every agent check again.
func (r *LiveChangeReconciler) againUnderThisLeader(ctx context.Context, ch *v1alpha1.NetworkChange) (bool, error) {
	plan, err := r.clusterPlan(ctx)
	if err != nil || !livechange.PlannedUnderAnotherLeader(plan, ch.ID, r.TimeURL) {
		return false, err
	}
	was := ch.ID
	started := metav1.NewTime(r.Now())
	ch.Attempt++
	ch.ID, ch.StartedAt = changeID(ch.Kind, ch.Generation, ch.Attempt, ch.DryRun), &started
	ch.Ready, ch.Failed, ch.Applied = 0, 0, 0
	ch.Message = fmt.Sprintf("checking preconditions on every node again (attempt %d): %s was planned by another operator, "+
		"whose clock the agents measured; T0 is set on this one's", ch.Attempt, was)
	log.FromContext(ctx).Info("change planned by another operator: its preconditions are checked again against this one's clock",
		"was", was, "change", ch.ID, "plannedWith", plan.TimeURL, "timeURL", r.TimeURL)
	return true, nil
}

// startDryRun records dry run c: in its preconditions, or checked at once
// when no node would take a step.
func (r *LiveChangeReconciler) startDryRun(ctx context.Context, cn *v1alpha1.NetshiftNetwork, c livechange.Change) time.Duration {
	id := changeID(c.Kind, cn.Generation, 1, true)
	log.FromContext(ctx).Info("dry run requested", "change", id, "from", c.From, "to", c.To)
	started := metav1.NewTime(r.Now())
	ch := &v1alpha1.NetworkChange{ID: id, Kind: c.Kind, From: c.From, To: c.To, DryRun: true, Phase: v1alpha1.PhasePreconditions,
		Message: "dry run: checking preconditions on every node", Attempt: 1, StartedAt: &started, Generation: cn.Generation,
		Steps: r.stepsOf(cn, c), Down: downOf(cn.Status.Change)}
	cn.Status.Change = ch
	switch {
	case c.From == c.To:
		ch.Phase, ch.Message = v1alpha1.PhaseChecked, fmt.Sprintf("dry run: %d is the value in force; nothing would change", c.To)
	case !c.NodeSteps:
		ch.Phase, ch.Message = v1alpha1.PhaseChecked, fmt.Sprintf("dry run: the cluster uses %s, so the change would be recorded with no node step",
			livechange.FromSpec(cn.Spec).Encapsulation)
	default:
		return 100 * time.Millisecond
	}
	return 0
}

// advanceDryRun evaluates a dry run's reports and, once every node answered,
// withdraws its plans: nothing was touched, no node was cordoned.
func (r *LiveChangeReconciler) advanceDryRun(ctx context.Context, ch *v1alpha1.NetworkChange, nodes []corev1.Node,
	byNode map[string]*v1alpha1.NetshiftNodeState, reports map[string]*v1alpha1.LiveChangeReport) (time.Duration, error) {
	d := r.deadlines(ch, reports)
	p := livechange.EvaluateDryRun(reports, r.Now(), d)
	ch.Ready, ch.Failed, ch.Message = p.Ready, p.Failed, p.Message
	if p.Phase != v1alpha1.PhaseChecked {
		return livechange.NextLook(r.Now(), time.Time{}, d, activeHeartbeat), nil
	}
	if err := r.finish(ctx, nodes, byNode, ch.ID); err != nil {
		return 0, err
	}
	ch.Phase = v1alpha1.PhaseChecked
	return 0, nil
}

// collectReports reads every node and its state, gives the cluster the
// change's plan while it checks its preconditions, takes away a node's own
// plan of an earlier change (it would hide the cluster's), and returns the
// report of this change of each node it is for (nil where none yet).
func (r *LiveChangeReconciler) collectReports(ctx context.Context, ch *v1alpha1.NetworkChange, spec v1alpha1.NetshiftNetworkSpec) (
	*corev1.NodeList, map[string]*v1alpha1.NetshiftNodeState, map[string]*v1alpha1.LiveChangeReport, error) {
	// From the cache: every agent's report is an event that brings a pass here, and a pass
	// that listed thousands of nodes past the cache would cost the API server more than the
	// change itself. The writes are guarded by each state's resourceVersion.
	// Not copied out of the cache (thousands of objects a pass): nothing here changes them;
	// setPlan writes a copy.
	var nodes corev1.NodeList
	var states v1alpha1.NetshiftNodeStateList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	if err := r.Client.List(ctx, &states, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, err
	}
	byNode := map[string]*v1alpha1.NetshiftNodeState{}
	for i := range states.Items {
		byNode[states.Items[i].Name] = &states.Items[i]
	}
	taking := r.taking(ctx, nodes.Items, ch, spec)
	ch.Outside, ch.Down = taking.Outside, taking.Down
	reports := map[string]*v1alpha1.LiveChangeReport{}
	var outdated []string
	for _, name := range taking.In {
		nns, ok := byNode[name]
		if !ok {
			reports[name] = nil // its state is not created yet: wait
			continue
		}
		if livechange.OwnPlanOutdated(nns.Spec.LiveChange, ch.ID) {
			outdated = append(outdated, name)
		}
		if rep := nns.Status.LiveChange; rep != nil && rep.ID == ch.ID {
			reports[name] = rep
		} else {
			reports[name] = nil
		}
	}
	if err := fanOut(ctx, outdated, nil, func(ctx context.Context, name string) error { return r.setPlan(ctx, byNode[name], nil) }); err != nil {
		return nil, nil, nil, err
	}
	if ch.Phase == v1alpha1.PhasePreconditions {
		if err := r.planCluster(ctx, ch, livechange.FromSpec(spec), len(taking.In)); err != nil {
			return nil, nil, nil, err
		}
	}
	return &nodes, byNode, reports, nil
}

// taking is which nodes change ch is for: those that run the agent and are
// not down (NotReady past spec.downNodeGrace) nor still behind an earlier
// change. A node once down stays out of the change: it catches up after.
func (r *LiveChangeReconciler) taking(ctx context.Context, nodes []corev1.Node, ch *v1alpha1.NetworkChange, spec v1alpha1.NetshiftNetworkSpec) livechange.Taking {
	now := r.Now()
	return livechange.WhoTakesPart(r.Placement.Facts(ctx, nodes, now), now, downNodeGrace(spec), ch.Down)
}

// downNodeGrace is spec.downNodeGrace, or its default.
func downNodeGrace(spec v1alpha1.NetshiftNetworkSpec) time.Duration {
	if spec.DownNodeGrace == nil {
		return livechange.DefaultDownNodeGrace
	}
	return spec.DownNodeGrace.Duration
}

// deadlines are when a silent agent is judged silent: AnswerTimeout after
// the last node answered (before T0 its preconditions, after T0 its steps),
// and only over time this operator was there to hear it (after a restart and
// a leader election the answer timeout counts from this process's start).
//
// Every node answers with a write, and at thousands of nodes the API server
// takes a while to take them all: while answers keep coming in, the agents
// are heard, and the change waits for them at any size of cluster.
func (r *LiveChangeReconciler) deadlines(ch *v1alpha1.NetworkChange, reports map[string]*v1alpha1.LiveChangeReport) livechange.Deadlines {
	var d livechange.Deadlines
	last := r.answers.last(ch, reports, r.Now())
	if ch.StartedAt != nil {
		from := ch.StartedAt.Time
		if sent, ok := r.plansSent.Load(ch.ID); ok && sent.(time.Time).After(from) {
			from = sent.(time.Time)
		}
		d.Preconditions = r.since(latest(from, last)).Add(r.AnswerTimeout)
	}
	if ch.T0 != nil {
		d.Steps = r.since(latest(ch.T0.Time, last)).Add(r.AnswerTimeout)
	}
	return d
}

// heardGap is how long the NetshiftNetwork may go unread (the control plane
// away) before the time is taken as time no agent could be heard in.
const heardGap = 5 * time.Second

// heard notes that the control plane answers. After a gap since the last
// pass that ended well (the API server stopped, the network to it cut)
// silent agents are judged only from now:
// they could not report meanwhile, and a deadline that ran out while nobody
// could answer would record a silence that was the control plane's.
func (r *LiveChangeReconciler) heard(ctx context.Context) {
	now := r.Now()
	if !r.heardAt.IsZero() && now.Sub(r.heardAt) > heardGap && now.After(r.listening) {
		log.FromContext(ctx).Info("the control plane answers again: silent agents are judged from now", "away", now.Sub(r.heardAt).Round(time.Millisecond))
		r.listening = now
	}
	r.heardAt = now
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// advance moves an active change: it gives the cluster its plan, evaluates
// the agents' reports, schedules T0 and finishes.
func (r *LiveChangeReconciler) advance(ctx context.Context, cn *v1alpha1.NetshiftNetwork) (time.Duration, error) {
	ch := cn.Status.Change
	if ch.Phase == v1alpha1.PhaseRollingBack {
		return r.advanceRollback(ctx, cn)
	}
	// Not under an abort of this attempt: the abort names its ID, and a new attempt would escape it.
	if ch.Phase == v1alpha1.PhasePreconditions && cn.Annotations[AbortAnnotation] != ch.ID {
		if again, err := r.againUnderThisLeader(ctx, ch); again || err != nil {
			return 100 * time.Millisecond, err // the next pass plans the new attempt
		}
	}
	nodes, byNode, reports, err := r.collectReports(ctx, ch, cn.Spec)
	if err != nil {
		return 0, err
	}
	ch.Nodes = int32(len(reports))
	if cn.Annotations[AbortAnnotation] == ch.ID {
		if aborted, err := r.abort(ctx, ch, nodes.Items, byNode); aborted || err != nil {
			return 0, err
		}
	}
	if ch.DryRun {
		return r.advanceDryRun(ctx, ch, nodes.Items, byNode, reports)
	}
	now := r.Now()
	d := r.deadlines(ch, reports)
	if ch.Phase == v1alpha1.PhaseScheduled && ch.Southbound == "Pending" {
		if wait := ch.T0.Sub(now); wait > 0 {
			return wait, nil
		}
		if err := r.setTunnelPortRecord(ctx, ch.Kind, ch.To); err != nil {
			ch.Southbound = "Failed: " + err.Error()
		} else {
			ch.Southbound = "Done"
		}
	}
	p := livechange.Evaluate(ch.Phase, reports, now, d, livechange.PolicyFromSpec(cn.Spec.OnFailure, len(reports)))
	if p.Phase == v1alpha1.PhaseSucceeded && strings.HasPrefix(ch.Southbound, "Failed") {
		p.Phase, p.Message = v1alpha1.PhaseFailed, "southbound Encap records: "+ch.Southbound
	}
	ch.Ready, ch.Applied, ch.Failed, ch.Message = p.Ready, p.Applied, p.Failed, p.Message
	switch {
	case ch.Phase == v1alpha1.PhasePreconditions && p.Phase == v1alpha1.PhaseScheduled:
		lead, err := r.schedule(ctx, cn, reports)
		if err != nil {
			return 0, err
		}
		ch.Phase = v1alpha1.PhaseScheduled
		ch.Message = fmt.Sprintf("every node passed its preconditions; T0 is %s, %s ahead", ch.T0.Format("15:04:05.000"), lead.Round(time.Millisecond))
	case p.Phase == v1alpha1.PhaseRollingBack:
		// Recorded before any rollback plan is written (the next pass writes them): a pass
		// that writes plans and fails to record why would find them and not know them.
		r.decideRollback(ch, p)
	case p.Phase == v1alpha1.PhaseSucceeded:
		applied := livechange.Change{Kind: ch.Kind, From: ch.From, To: ch.To}.Apply(*cn.Status.Applied)
		cn.Status.Applied = &applied
		ch.Phase = v1alpha1.PhaseSucceeded
		if err := r.finish(ctx, nodes.Items, byNode, ch.ID); err != nil {
			return 0, err
		}
	case p.Phase == v1alpha1.PhaseFailed:
		if err := r.fail(ctx, cn, nodes.Items, byNode, p); err != nil {
			return 0, err
		}
	}
	if ch.Phase.Active() {
		var t0 time.Time
		if ch.T0 != nil {
			t0 = ch.T0.Time
		}
		return livechange.NextLook(r.Now(), t0, d, activeHeartbeat), nil
	}
	return 0, nil
}

// fail ends the change Failed as p decided: before T0 to be tried again,
// after it with its silent nodes converging (they keep their plan, T0 in the
// past, and an MTU change cordons them within their pools' limits: when
// their agent comes back it runs the steps late) and the nodes whose step
// failed held for a person (spec.onFailure.action None).
func (r *LiveChangeReconciler) fail(ctx context.Context, cn *v1alpha1.NetshiftNetwork, nodes []corev1.Node,
	byNode map[string]*v1alpha1.NetshiftNodeState, p livechange.Progress) error {
	ch := cn.Status.Change
	if ch.Phase == v1alpha1.PhaseScheduled && (p.Applied > 0 || len(p.Silent) > 0) {
		// Past T0 the nodes that applied their steps run the new value, and the silent ones
		// converge to it when they come back: it is what is applied now; the nodes not there
		// yet are named (converging, held), the failed ones in Degraded too.
		applied := livechange.Change{Kind: ch.Kind, From: ch.From, To: ch.To}.Apply(*cn.Status.Applied)
		cn.Status.Applied = &applied
	}
	if ch.Phase == v1alpha1.PhasePreconditions {
		retry := metav1.NewTime(r.Now().Add(r.RetryAfter))
		ch.RetryAt = &retry
		ch.Message += fmt.Sprintf("; tried again at %s (attempt %d), or revert the edit", retry.Format("15:04:05"), ch.Attempt+1)
	}
	ch.Phase = v1alpha1.PhaseFailed
	ch.Converging, ch.Held = p.Silent, p.Held
	network := livechange.NodeConfig(*cn.Status.Applied, livechange.FromSpec(cn.Spec).Encapsulation)
	return r.leaveBehind(ctx, nodes, byNode, ch, network)
}

// abort ends change ch Aborted, its plan withdrawn and its holds given
// back, if T0 is not too close (or the plan is already gone: withdrawn in
// time by a pass whose status write was lost); otherwise it says why not.
func (r *LiveChangeReconciler) abort(ctx context.Context, ch *v1alpha1.NetworkChange, nodes []corev1.Node,
	byNode map[string]*v1alpha1.NetshiftNodeState) (bool, error) {
	withdrawn, window := false, time.Duration(0)
	if ch.Phase == v1alpha1.PhaseScheduled {
		plan, err := r.clusterPlan(ctx)
		if err != nil {
			return false, err
		}
		withdrawn = plan == nil || plan.ID != ch.ID
		if !withdrawn {
			window = time.Duration(plan.ConfirmWindowMs) * time.Millisecond
		}
	}
	if ch.Phase != v1alpha1.PhasePreconditions && !withdrawn && (ch.T0 == nil || ch.T0.Sub(r.Now()) <= livechange.AbortDeadline(window)) {
		ch.Message = "abort refused: T0 has passed (or is too close); edit the value back to change it again"
		return false, nil
	}
	if err := r.finish(ctx, nodes, byNode, ch.ID); err != nil {
		return false, err
	}
	ch.Phase, ch.Message = v1alpha1.PhaseAborted, "aborted before T0; nothing was changed on any node"
	return true, nil
}

// activeHeartbeat is how often an active change is looked at with no report
// arriving and no deadline sooner.
const activeHeartbeat = time.Second

// writeSpacing is the time a node the agents spread their answers over.
func (r *LiveChangeReconciler) writeSpacing() time.Duration {
	return cmp.Or(r.AgentWriteSpacing, livechange.DefaultAgentWriteSpacing)
}

// planCluster writes change ch's plan for every node of the cluster's nodes
// (its preconditions: no T0 yet) unless the cluster has it already.
func (r *LiveChangeReconciler) planCluster(ctx context.Context, ch *v1alpha1.NetworkChange, wanted livechange.Wanted, nodes int) error {
	cluster, err := r.clusterPlan(ctx)
	if err != nil || (cluster != nil && cluster.ID == ch.ID) {
		return err
	}
	plan := &v1alpha1.LiveChangePlan{ID: ch.ID, Kind: ch.Kind, From: ch.From, To: ch.To, Plugin: r.Plugin.Name(), Without: ch.Down,
		UnderlayMTU: wanted.UnderlayMTU, Encapsulation: wanted.Encapsulation, TimeURL: r.TimeURL,
		WrittenAt: ptr.To(metav1.NewMicroTime(r.Now())), ClockSpreadMs: livechange.WindowMs(livechange.ClockSpread(nodes, r.writeSpacing())),
		ReportSpreadMs:  livechange.WindowMs(livechange.ReportSpread(nodes, r.writeSpacing())),
		ConfirmWindowMs: livechange.WindowMs(livechange.ConfirmWindow(nodes, r.writeSpacing()))}
	if err := r.setClusterPlan(ctx, plan); err != nil {
		return err
	}
	r.plansSent.Store(ch.ID, r.Now())
	return nil
}

// setPlan writes plan into a copy of the node's state (nil removes it), guarded by the
// state's resourceVersion. A state read from the cache may be older than the one stored: on a
// conflict it is read again past the cache and the plan laid on it, a few times.
func (r *LiveChangeReconciler) setPlan(ctx context.Context, nns *v1alpha1.NetshiftNodeState, plan *v1alpha1.LiveChangePlan) error {
	what := "remove the live change plan"
	if plan != nil {
		what = "write live change plan " + plan.ID
	}
	nns = nns.DeepCopy() // it may be the cache's own
	var err error
	for try := 0; try < 4; try++ {
		if try > 0 {
			if err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(nns), nns); err != nil {
				break
			}
		}
		patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		nns.Spec.LiveChange = plan
		if err = r.Client.Patch(ctx, nns, patch); !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("node %s: %s: %w", nns.Name, what, err)
	}
	if plan != nil {
		r.planned.Store(nns.Name, plannedAs{ID: plan.ID, UID: nns.UID})
	} else {
		r.planned.Delete(nns.Name)
	}
	return nil
}

// schedule sets T0 and the steps in the cluster's plan: one write, which
// every agent's watch brings it at once, as it brought the plan; T0 is as far
// ahead as the nodes' reports say the plan took to reach them allows
// (livechange.Lead). No node is cordoned: during an MTU change's steps each
// agent holds its node's pod set-ups off itself.
func (r *LiveChangeReconciler) schedule(ctx context.Context, cn *v1alpha1.NetshiftNetwork, reports map[string]*v1alpha1.LiveChangeReport) (time.Duration, error) {
	ch := cn.Status.Change
	c := livechange.Change{Kind: ch.Kind, From: ch.From, To: ch.To, NodeSteps: true}
	plan, err := r.clusterPlan(ctx)
	if err != nil {
		return 0, err
	}
	if plan == nil || plan.ID != ch.ID {
		return 0, fmt.Errorf("the cluster's live change plan is %s, not %s's: not scheduled", planID(plan), ch.ID)
	}
	reached := planReached(reports, ch.ID)
	window := time.Duration(plan.ConfirmWindowMs) * time.Millisecond
	lead := max(livechange.Lead(r.Lead, len(reports), reached), livechange.AbortDeadline(window)+abortMargin)
	log.FromContext(ctx).Info("T0's lead", "lead", lead, "nodesThatMeasured", len(reached), "nodes", len(reports))
	t0 := metav1.NewMicroTime(r.Now().Add(lead))
	ch.T0 = &t0
	if r.Plugin.TunnelPortRecord(ch.Kind) != nil {
		// The cluster holds the port (OVN's southbound Encap rows, from which ovn-controller
		// builds every tunnel): it is set there at T0, by this controller, which holds the
		// connection; the driver gives the nodes no tunnel step.
		ch.Southbound = "Pending"
	}
	steps := r.Plugin.Steps(ch.Kind, livechange.FromSpec(cn.Spec).Encapsulation)
	plan.Steps = livechange.Schedule(c, steps, r.Spacing)
	ch.Steps = actions(plan.Steps)
	network := livechange.NodeConfig(c.Apply(*cn.Status.Applied), livechange.FromSpec(cn.Spec).Encapsulation)
	plan.T0, plan.Network, plan.Without = &t0, &network, ch.Down
	return lead, r.setClusterPlan(ctx, plan)
}

// planReached is how long change id's plan took to reach each node that
// measured it, from the nodes' answers.
func planReached(reports map[string]*v1alpha1.LiveChangeReport, id string) []time.Duration {
	var reached []time.Duration
	for _, rep := range reports {
		if rep != nil && rep.ID == id && rep.PlanReachedMs != nil {
			reached = append(reached, time.Duration(*rep.PlanReachedMs)*time.Millisecond)
		}
	}
	return reached
}

func planID(p *v1alpha1.LiveChangePlan) string {
	if p == nil {
		return "absent"
	}
	return p.ID
}

// finish removes the cluster's plan, then gives back the nodes' holds of
// this change (a node left behind and held; each uncordoned unless another
// hold still needs the cordon; under the ledger, from fresh reads) and
// removes the nodes' own plans but keep's. The cluster's plan goes first, in
// one write: an abort a moment before T0 must reach every agent before
// anything written node by node.
func (r *LiveChangeReconciler) finish(ctx context.Context, nodes []corev1.Node, byNode map[string]*v1alpha1.NetshiftNodeState, id string, keep ...string) error {
	if err := r.removeClusterPlan(ctx, id); err != nil {
		return err
	}
	if err := r.releaseAll(ctx, nodes, byNode, id, keep); err != nil {
		return err
	}
	var planned []string
	for _, n := range nodes {
		nns := byNode[n.Name]
		if nns == nil || slices.Contains(keep, n.Name) {
			continue
		}
		// A plan written in a pass the cache does not show yet is removed too; a catch-up of a
		// node that was down is not the change's, and runs on.
		if own := nns.Spec.LiveChange; (own != nil && !livechange.IsCatchUp(own.ID)) || r.wrote(nns, id) || r.wrote(nns, livechange.RollbackID(id)) {
			planned = append(planned, n.Name)
		}
	}
	return fanOut(ctx, planned, nil, func(ctx context.Context, name string) error { return r.setPlan(ctx, byNode[name], nil) })
}

// releaseAll gives back the LiveChange holds of change id of every node but
// keep's, recorded in its state or on the Node, under the ledger and from
// fresh reads; byNode gets the states written.
func (r *LiveChangeReconciler) releaseAll(ctx context.Context, nodes []corev1.Node, byNode map[string]*v1alpha1.NetshiftNodeState, id string, keep []string) error {
	held := false
	for _, n := range nodes {
		if nns := byNode[n.Name]; nns != nil && !slices.Contains(keep, n.Name) {
			h, ok := hold.Of(nns.Status, v1alpha1.HoldLiveChange)
			held = held || (ok && h.ID == id) || nns.Status.LiveChangeCordoned == id || n.Annotations[hold.NodeAnnotation] == id
		}
	}
	if !held {
		return nil // a port change holds nothing: no fresh reads
	}
	r.Ledger.Lock()
	defer r.Ledger.Unlock()
	freshNode, freshState, err := freshNodes(ctx, r.Client, r.APIReader, r.Now())
	if err != nil {
		return err
	}
	var release []string
	for _, n := range nodes {
		node, nns := freshNode[n.Name], freshState[n.Name]
		if node == nil || nns == nil || slices.Contains(keep, n.Name) {
			continue
		}
		byNode[n.Name] = nns
		if h, ok := hold.Of(nns.Status, v1alpha1.HoldLiveChange); (ok && h.ID == id) || node.Annotations[hold.NodeAnnotation] == id {
			release = append(release, n.Name)
		}
	}
	return fanOut(ctx, release, nil, func(ctx context.Context, name string) error {
		nns, node := freshState[name], freshNode[name]
		if h, ok := hold.Of(nns.Status, v1alpha1.HoldLiveChange); ok && h.ID == id {
			if err := releaseHold(ctx, r.Client, nns, node, v1alpha1.HoldLiveChange, id, nil); err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
		}
		if err := releaseHoldOnNode(ctx, r.Client, nns, node, id); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		return nil
	})
}

// keepSouthbound, where the cluster holds the tunnel port in a record of its
// own (OVN's southbound Encap rows), puts the applied port back on the rows
// that lost it, and comes back to check every SouthboundResync.
func (r *LiveChangeReconciler) keepSouthbound(ctx context.Context, cn *v1alpha1.NetshiftNetwork, requeue time.Duration) time.Duration {
	kind := v1alpha1.ChangeGenevePort
	if livechange.FromSpec(cn.Spec).Encapsulation == v1alpha1.EncapVXLAN {
		kind = v1alpha1.ChangeVXLANPort
	}
	record := r.Plugin.TunnelPortRecord(kind)
	if record == nil || cn.Status.Applied == nil {
		return requeue
	}
	port := livechange.NodeConfig(*cn.Status.Applied, livechange.FromSpec(cn.Spec).Encapsulation).TunnelPort
	// Bounded: a database that is gone (a retired central zone) must not hold the controller.
	kctx, cancel := context.WithTimeout(ctx, southboundTimeout)
	defer cancel()
	if fixed, err := record.Keep(kctx, int(port)); err != nil {
		log.FromContext(ctx).Error(err, "check the cluster's record of the tunnel port", "port", port)
	} else if fixed > 0 {
		log.FromContext(ctx).Info("the cluster's record of the tunnel port had lost the applied port; set it again", "records", fixed, "port", port)
	}
	if requeue == 0 || requeue > r.SouthboundResync {
		return r.SouthboundResync
	}
	return requeue
}

// stepsOf names the steps change c has on every node.
func (r *LiveChangeReconciler) stepsOf(cn *v1alpha1.NetshiftNetwork, c livechange.Change) []v1alpha1.StepAction {
	return actions(livechange.Schedule(c, r.Plugin.Steps(c.Kind, livechange.FromSpec(cn.Spec).Encapsulation), r.Spacing))
}

func actions(steps []v1alpha1.ScheduledStep) []v1alpha1.StepAction {
	out := make([]v1alpha1.StepAction, len(steps))
	for i, s := range steps {
		out[i] = s.Action
	}
	return out
}

// followPlugin has the network plugin's own configuration carry the applied
// network (its driver's Follow), once each time the applied network changes
// and again every SouthboundResync: the plugin's objects are not watched, and
// one read of them per pass would be one per node report on a large cluster.
func (r *LiveChangeReconciler) followPlugin(ctx context.Context, cn *v1alpha1.NetshiftNetwork, requeue time.Duration) time.Duration {
	st := &cn.Status
	if st.Applied == nil || (st.Change != nil && (len(st.Change.Converging) > 0 || len(st.Change.Held) > 0 || len(st.Change.Rebooting) > 0)) {
		return requeue
	}
	now := r.Now()
	if now.Sub(r.followedAt) < r.SouthboundResync && (r.followed == nil || *r.followed == *st.Applied) {
		return requeue
	}
	did, err := r.Plugin.Follow(ctx, *st.Applied)
	if err != nil {
		// Tried again at the next resync, not at every node's report.
		r.followed, r.followedAt = nil, now
		log.FromContext(ctx).Error(err, "the network plugin's configuration does not carry the applied network yet", "plugin", r.Plugin.Name())
		return min(nonZero(requeue, r.SouthboundResync), r.SouthboundResync)
	}
	if did != "" {
		log.FromContext(ctx).Info("the network plugin's configuration follows the applied network", "plugin", r.Plugin.Name(), "did", did)
	}
	applied := *st.Applied
	r.followed, r.followedAt = &applied, now
	return min(nonZero(requeue, r.SouthboundResync), r.SouthboundResync)
}

func nonZero(d, otherwise time.Duration) time.Duration {
	if d == 0 {
		return otherwise
	}
	return d
}

// setTunnelPortRecord sets port in the cluster's record of the tunnel port a
// change of kind changes.
func (r *LiveChangeReconciler) setTunnelPortRecord(ctx context.Context, kind v1alpha1.ChangeKind, port int32) error {
	record := r.Plugin.TunnelPortRecord(kind)
	if record == nil {
		return fmt.Errorf("the %s driver holds no cluster record of the %s (was the operator restarted without --ovn-southbound?)", r.Plugin.Name(), kind)
	}
	ctx, cancel := context.WithTimeout(ctx, southboundTimeout)
	defer cancel()
	return record.Set(ctx, int(port))
}

// southboundTimeout bounds one use of the cluster's tunnel port record.
const southboundTimeout = 10 * time.Second

// setConditions keeps the four conditions present and current.
func (r *LiveChangeReconciler) setConditions(cn *v1alpha1.NetshiftNetwork) {
	gen := cn.Generation
	ch := cn.Status.Change
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&cn.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	switch {
	case ch != nil && ch.Phase.Active():
		msg := fmt.Sprintf("%s %s from %d to %d: %s", ch.ID, ch.Phase, ch.From, ch.To, ch.Message)
		set(CondProgressing, metav1.ConditionTrue, v1alpha1.ReasonChangePrefix+string(ch.Phase), msg)
		set(CondUpgradeable, metav1.ConditionFalse, v1alpha1.ReasonChangeInProgress, msg)
		set(CondDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "")
	case ch != nil && ch.Phase == v1alpha1.PhaseFailed && ((ch.T0 != nil && ch.Failed > 0) || (ch.T0 == nil && r.stillWanted(cn))):
		set(CondProgressing, metav1.ConditionFalse, v1alpha1.ReasonChangeFailed, ch.Message)
		set(CondDegraded, metav1.ConditionTrue, v1alpha1.ReasonChangeFailed, fmt.Sprintf("%s from %d to %d failed: %s", ch.ID, ch.From, ch.To, ch.Message))
		set(CondUpgradeable, metav1.ConditionTrue, v1alpha1.ReasonAsExpected, "")
	case ch != nil && ch.Phase == v1alpha1.PhaseAborted && len(ch.Converging) > 0:
		set(CondProgressing, metav1.ConditionTrue, v1alpha1.ReasonChangePrefix+string(ch.Phase), ch.Message)
		set(CondDegraded, metav1.ConditionTrue, v1alpha1.ReasonChangePrefix+string(ch.Phase), ch.Message)
		set(CondUpgradeable, metav1.ConditionFalse, v1alpha1.ReasonChangeInProgress, ch.Message)
	case ch != nil && ch.Phase == v1alpha1.PhaseRolledBack && r.stillWanted(cn):
		msg := fmt.Sprintf("%s from %d to %d was rolled back: %s. The spec still asks for %d: set it back to %d, or fix the cause and ask again (set %d, then %d)",
			ch.ID, ch.From, ch.To, ch.Message, ch.To, ch.From, ch.From, ch.To)
		set(CondProgressing, metav1.ConditionFalse, v1alpha1.ReasonChangeRolledBack, ch.Message)
		set(CondDegraded, metav1.ConditionTrue, v1alpha1.ReasonChangeRolledBack, msg)
		set(CondUpgradeable, metav1.ConditionTrue, v1alpha1.ReasonAsExpected, "")
	default:
		msg := "no change in progress"
		if ch != nil {
			msg = fmt.Sprintf("%s from %d to %d: %s", ch.ID, ch.From, ch.To, ch.Message)
		}
		set(CondProgressing, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, msg)
		set(CondDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "")
		set(CondUpgradeable, metav1.ConditionTrue, v1alpha1.ReasonAsExpected, "")
	}
	set(CondAvailable, metav1.ConditionTrue, v1alpha1.ReasonAsExpected, "the cluster network carries traffic")
	cn.Status.ObservedGeneration = gen
}

// stillWanted reports whether the spec still asks for the last change (a
// failed change the user reverted degrades nothing).
func (r *LiveChangeReconciler) stillWanted(cn *v1alpha1.NetshiftNetwork) bool {
	c, ok := livechange.Next(livechange.FromSpec(cn.Spec), *cn.Status.Applied)
	return ok && c.Kind == cn.Status.Change.Kind && c.To == cn.Status.Change.To
}

func equalStatus(a, b v1alpha1.NetshiftNetworkStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
