package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/rollout"
)

// drainKey is the one work item of the drain controller: every pass decides
// for the whole cluster at once, so decisions never race each other.
var drainKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "drain"}}

// podNodeIndex indexes pods by spec.nodeName.
const podNodeIndex = "spec.nodeName"

// DrainReconciler is the central drain controller. Each pass reads nodes,
// pools, NetshiftNodeStates and the drain policy live from the API server (not
// from the cache, which may lag behind the pass's own last writes), asks
// rollout.DecideDrains what to do, and carries the decisions out in order,
// every NetshiftNodeState write guarded by its resourceVersion.
type DrainReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	Metrics   *DrainMetrics
	Now       func() time.Time
	// RetryInterval is how often a draining node's evictions are retried.
	RetryInterval time.Duration
	// Settle is rollout.DrainPolicy.Settle.
	Settle time.Duration

	// Ledger serializes passes with every other take and release of a node's hold.
	Ledger *Ledger
	// pace spaces the passes (see passPacer).
	pace passPacer
}

func (r *DrainReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podNodeIndex, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index pods by node: %w", err)
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{drainKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("drain").
		Watches(&v1alpha1.NetshiftNodeState{}, all, builder.WithPredicates(onUpdate(stateChangedBeyondALiveChange))).
		Watches(&v1alpha1.NetshiftNodePool{}, all).
		Watches(&v1alpha1.NetshiftNetwork{}, all, builder.WithPredicates(onUpdate(networkChangedBeyondItsStatus))).
		Watches(&corev1.Node{}, all, builder.WithPredicates(onUpdate(drainNodeChanged))).
		Watches(&corev1.Pod{}, all, builder.WithPredicates(onUpdate(drainPodChanged))).
		Complete(r)
}

// snapshot is what one pass reads.
type snapshot struct {
	nodes  map[string]*corev1.Node
	states map[string]*v1alpha1.NetshiftNodeState
	pools  []v1alpha1.NetshiftNodePool
	policy rollout.DrainPolicy
	// invalid are the pools whose spec cannot be used; their status says so.
	invalid []rollout.InvalidPool
}

func (r *DrainReconciler) read(ctx context.Context) (*snapshot, error) {
	var nodes corev1.NodeList
	if err := r.APIReader.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var states v1alpha1.NetshiftNodeStateList
	if err := r.APIReader.List(ctx, &states); err != nil {
		return nil, fmt.Errorf("list NetshiftNodeStates: %w", err)
	}
	var pools v1alpha1.NetshiftNodePoolList
	if err := r.APIReader.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("list NetshiftNodePools: %w", err)
	}
	policy, err := readDrainPolicy(ctx, r.APIReader)
	if err != nil {
		return nil, err
	}
	policy.Settle = r.Settle
	s := &snapshot{nodes: map[string]*corev1.Node{}, states: map[string]*v1alpha1.NetshiftNodeState{}, pools: pools.Items, policy: policy}
	for i := range nodes.Items {
		s.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range states.Items {
		if err := adoptHolds(ctx, r.Client, &states.Items[i], r.Now()); err != nil {
			return nil, err
		}
		s.states[states.Items[i].Name] = &states.Items[i]
	}
	return s, nil
}

// readDrainPolicy reads NetshiftNetwork "cluster"; without one, the defaults apply.
func readDrainPolicy(ctx context.Context, c client.Reader) (rollout.DrainPolicy, error) {
	var cn v1alpha1.NetshiftNetwork
	err := c.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn)
	if apierrors.IsNotFound(err) {
		return rollout.DefaultDrainPolicy, nil
	}
	if err != nil {
		return rollout.DefaultDrainPolicy, fmt.Errorf("get NetshiftNetwork %s: %w", v1alpha1.NetshiftNetworkName, err)
	}
	return rollout.DrainPolicyFrom(cn.Spec.Drain), nil
}

// Membership compiles the pools and resolves which pool owns each node; an
// invalid pool is an error (`netshift plan`: the files are the user's input).
func Membership(nodes []corev1.Node, nps []v1alpha1.NetshiftNodePool) (rollout.Membership, error) {
	m, invalid := MembershipHolding(nodes, nps)
	var errs []error
	for _, ip := range invalid {
		errs = append(errs, ip.Err)
	}
	return m, errors.Join(errs...)
}

// MembershipHolding is Membership for the controllers and `netshift status`:
// a pool that cannot be compiled (stored before the API refused its spec) is
// returned as invalid, and the nodes it might own are held (no slot granted,
// no zone move started) while everything else goes on.
func MembershipHolding(nodes []corev1.Node, nps []v1alpha1.NetshiftNodePool) (rollout.Membership, []rollout.InvalidPool) {
	var pools []rollout.Pool
	var invalid []rollout.InvalidPool
	for i := range nps {
		p, err := rollout.NewPool(&nps[i])
		if err != nil {
			prio := int32(rollout.DefaultPriority)
			if nps[i].Spec.Priority != nil {
				prio = *nps[i].Spec.Priority
			}
			invalid = append(invalid, rollout.InvalidPool{Name: nps[i].Name, Priority: prio, Err: err})
			continue
		}
		pools = append(pools, p)
	}
	rn := make([]rollout.Node, len(nodes))
	for i, n := range nodes {
		rn[i] = rollout.Node{Name: n.Name, Labels: n.Labels}
	}
	m := rollout.Resolve(rn, pools)
	m.Hold(pools, invalid)
	return m, invalid
}

func (r *DrainReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	// A pass reads every node, state and pool past the cache: a second of the API server's
	// time at thousands of nodes.
	if wait := r.pace.wait(); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.Ledger.Lock()
	defer r.Ledger.Unlock()
	began := time.Now()
	decisions := 0
	defer func() {
		log.FromContext(ctx).V(1).Info("drain pass", "took", r.pace.ran(began), "decisions", decisions)
	}()
	s, err := r.read(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	nodeList := make([]corev1.Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		nodeList = append(nodeList, *n)
	}
	// The API server refuses bad pools; one stored before it did must not silently move its
	// nodes to another pool and its limits: the nodes it might own get no slot until it is
	// fixed (its status says why), and everything else, releases included, goes on.
	m, invalid := MembershipHolding(nodeList, s.pools)
	s.invalid = invalid

	var drains []rollout.NodeDrain
	pending := map[string][]corev1.Pod{}
	for name, st := range s.states {
		if _, ok := s.nodes[name]; !ok {
			continue // its node is gone; the nodestate controller deletes it
		}
		nd := rollout.NodeDrain{Name: name, Status: st.Status, Busy: hold.Busy(st.Status, v1alpha1.HoldDrain)}
		if st.Status.DrainStatus == v1alpha1.Draining {
			pods, err := r.podsToDrain(ctx, name)
			if err != nil {
				return ctrl.Result{}, err
			}
			pending[name] = pods
			nd.PodsLeft = len(pods)
		}
		drains = append(drains, nd)
	}

	now := r.Now()
	ds := rollout.DecideDrains(m, drains, s.policy, now)
	decisions = len(ds)
	// Decisions about different nodes are independent and run in parallel, but no slot is
	// granted before it is free: a pool's admissions wait for that pool's releases, and a
	// failed release stops them (rollout.Order). No pool waits for another.
	batches, others := rollout.Order(ds, m.Owner)
	requeue, errs := r.applyBatches(ctx, batches, others, s, m, pending, now)
	if len(errs) > 0 {
		return retryOnConflict(ctx, errs)
	}
	if err := r.writePoolStatus(ctx, s, m); err != nil {
		return ctrl.Result{}, err
	}
	r.Metrics.observePass(m, s.states)
	// A pending timeout, or a queue still settling, needs a pass later even if nothing changes.
	requeue = sooner(requeue, nextTimeout(s, now))
	for _, st := range s.states {
		if st.Status.DrainStatus == v1alpha1.DrainRequired {
			requeue = sooner(requeue, max(s.policy.Settle, 10*time.Millisecond))
			break
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// retryOnConflict turns lost optimistic-concurrency races (an agent wrote the
// same object during the pass) into a prompt new pass from fresh state: they
// are expected, not errors, and must not back off the one work item. Any
// other failure of the pass is returned, every one of them, races aside.
func retryOnConflict(ctx context.Context, errs []error) (ctrl.Result, error) {
	var failed []error
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return ctrl.Result{}, errors.Join(failed...)
	}
	log.FromContext(ctx).V(1).Info("writes lost a race; deciding again from fresh state", "error", errors.Join(errs...).Error())
	return ctrl.Result{RequeueAfter: 20 * time.Millisecond}, nil
}

// applyParallelism bounds the API calls one pass makes at once for slots
// (releases and admissions), and as many for everything else.
const applyParallelism = 16

// applyBatches carries out the batches, and beside them the other decisions,
// each side at most applyParallelism API calls at once (a pool's next node
// never queues behind evictions), and returns how soon the pass should run
// again (0: only when something changes) and every failure. A batch that fails
// stops there; the rest go on (no context is cancelled under a write: a hold
// recorded must get its cordon).
func (r *DrainReconciler) applyBatches(ctx context.Context, batches []rollout.Batch, others []rollout.Decision, s *snapshot,
	m rollout.Membership, pending map[string][]corev1.Pod, now time.Time) (time.Duration, []error) {
	var mu sync.Mutex
	var requeue time.Duration
	var errs []error
	// sideBySide carries ds out at once and says whether every one succeeded.
	sideBySide := func(ds []rollout.Decision, calls chan struct{}) bool {
		var wg sync.WaitGroup
		ok := true
		for _, d := range ds {
			wg.Go(func() {
				calls <- struct{}{}
				defer func() { <-calls }()
				again, err := r.apply(ctx, d, s.states[d.Node], s.nodes[d.Node], m.Owner[d.Node], pending[d.Node], now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs, ok = append(errs, fmt.Errorf("node %s: %s: %w", d.Node, d.Action, err)), false
					return
				}
				requeue = sooner(requeue, again)
			})
		}
		wg.Wait()
		return ok
	}
	slotCalls, otherCalls := make(chan struct{}, applyParallelism), make(chan struct{}, applyParallelism)
	var wg sync.WaitGroup
	wg.Go(func() { sideBySide(others, otherCalls) })
	for _, b := range batches {
		wg.Go(func() {
			if sideBySide(b.First, slotCalls) {
				sideBySide(b.Then, slotCalls)
			}
		})
	}
	wg.Wait()
	return requeue, errs
}

// sooner is the earlier of two requeue delays, where 0 means never.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func nextTimeout(s *snapshot, now time.Time) time.Duration {
	if s.policy.Timeout <= 0 {
		return 0
	}
	var next time.Duration
	for _, st := range s.states {
		if st.Status.DrainStatus != v1alpha1.Draining || st.Status.DrainStartedAt == nil {
			continue
		}
		left := st.Status.DrainStartedAt.Add(s.policy.Timeout).Sub(now) + time.Second
		if left > 0 && (next == 0 || left < next) {
			next = left
		}
	}
	return next
}

// podsToDrain lists the node's pods that a drain must see gone: all but
// DaemonSet pods, mirror (static) pods and pods that already finished.
func (r *DrainReconciler) podsToDrain(ctx context.Context, node string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{podNodeIndex: node}); err != nil {
		return nil, fmt.Errorf("node %s: list pods: %w", node, err)
	}
	return rollout.PodsToDrain(pods.Items), nil
}

// updateStatus writes a NetshiftNodeState's status with a merge patch that
// carries the resourceVersion read at the start of the pass: if the agent (or
// anything else) wrote in between, the write fails and the pass starts again
// from fresh state.
func (r *DrainReconciler) updateStatus(ctx context.Context, st *v1alpha1.NetshiftNodeState, mutate func(*v1alpha1.NetshiftNodeStateStatus)) error {
	patch := client.MergeFromWithOptions(st.DeepCopy(), client.MergeFromWithOptimisticLock{})
	mutate(&st.Status)
	return r.Client.Status().Patch(ctx, st, patch)
}

func (r *DrainReconciler) event(node *corev1.Node, eventType, reason, action, note string, args ...any) {
	if node == nil || r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(node, nil, eventType, reason, action, note, args...)
}

// apply carries out one decision. It returns how soon the pass should run again.
func (r *DrainReconciler) apply(ctx context.Context, d rollout.Decision, st *v1alpha1.NetshiftNodeState, node *corev1.Node,
	pool string, pods []corev1.Pod, now time.Time) (time.Duration, error) {
	logger := log.FromContext(ctx).WithValues("node", d.Node, "pool", pool, "operation", d.Operation, "action", d.Action)
	mnow := metav1.NewTime(now)
	switch d.Action {
	case rollout.ActionQueue:
		logger.Info("node asks for a drain; waiting for a slot")
		r.event(node, corev1.EventTypeNormal, "DrainQueued", "Queue", "node %s asks for a drain for operation %s; waiting for a slot in pool %s", d.Node, d.Operation, pool)
		return 0, r.updateStatus(ctx, st, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.DrainStatus, s.DrainOperation, s.Pool, s.DrainQueuedAt = v1alpha1.DrainRequired, d.Operation, pool, &mnow
			s.DrainMessage = fmt.Sprintf("waiting for a slot in pool %s", pool)
			s.DrainFailure, s.DrainStartedAt = nil, nil
		})

	case rollout.ActionCancel:
		logger.Info("drain request withdrawn")
		r.event(node, corev1.EventTypeNormal, "DrainCancelled", "Cancel", "node %s no longer asks for a drain for operation %s", d.Node, d.Operation)
		return 0, r.updateStatus(ctx, st, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.DrainStatus, s.DrainMessage = v1alpha1.DrainIdle, ""
		})

	case rollout.ActionAdmit:
		// The drain's hold: recorded first, the cordon second (takeHold). A node someone else
		// cordoned stays theirs; one a zone move or a live change cordoned stays cordoned until
		// its last holder lets go.
		h := v1alpha1.NodeHold{Kind: v1alpha1.HoldDrain, ID: d.Operation, Cordon: d.To == v1alpha1.Draining}
		var msg string
		err := takeHold(ctx, r.Client, st, node, h, now, func(s *v1alpha1.NetshiftNodeStateStatus) {
			msg = "configuring without a drain (drain disabled)"
			if d.To == v1alpha1.Draining {
				msg = "cordoned; evicting pods"
				if !s.CordonedByNetshift {
					msg = "already cordoned by someone else (netshift will not uncordon it); evicting pods"
				}
			}
			s.DrainStatus, s.Pool, s.DrainStartedAt, s.DrainMessage = d.To, pool, &mnow, msg
		})
		if err != nil {
			return 0, err
		}
		logger.Info("slot granted", "to", d.To, "cordonedByNetshift", st.Status.CordonedByNetshift)
		r.event(node, corev1.EventTypeNormal, "DrainStarted", "Admit", "pool %s granted node %s a slot for operation %s: %s", pool, d.Node, d.Operation, msg)
		return time.Millisecond, nil // start evicting at once

	case rollout.ActionEvict, rollout.ActionTimeoutWait:
		if st.Status.CordonedByNetshift {
			if err := setUnschedulable(ctx, r.Client, node, true); err != nil { // after a crash between record and cordon
				return 0, fmt.Errorf("cordon: %w", err)
			}
		}
		blocked, err := r.evict(ctx, node, pods, pool)
		if err != nil {
			return 0, err
		}
		// The message changes only when something blocks, so a plain drain costs no extra write.
		msg := "cordoned; evicting pods"
		if !st.Status.CordonedByNetshift {
			msg = "already cordoned by someone else (netshift will not uncordon it); evicting pods"
		}
		if blocked != "" {
			msg = fmt.Sprintf("evicting %d pods; %s; retrying every %s", len(pods), blocked, r.RetryInterval)
		}
		if d.Action == rollout.ActionTimeoutWait {
			msg = d.Reason + "; still waiting (onTimeout: Wait). " + msg
			if st.Status.DrainMessage != msg {
				r.event(node, corev1.EventTypeWarning, "DrainTimeout", "Drain", "%s", msg)
			}
		}
		if st.Status.DrainMessage != msg {
			if err := r.updateStatus(ctx, st, func(s *v1alpha1.NetshiftNodeStateStatus) { s.DrainMessage = msg }); err != nil {
				return 0, err
			}
		}
		return r.RetryInterval, nil

	case rollout.ActionComplete:
		if st.Status.CordonedByNetshift {
			if err := setUnschedulable(ctx, r.Client, node, true); err != nil { // after a crash between record and cordon
				return 0, fmt.Errorf("cordon: %w", err)
			}
		}
		logger.Info("node drained")
		r.event(node, corev1.EventTypeNormal, "DrainComplete", "Drain", "node %s drained for operation %s", d.Node, d.Operation)
		return 0, r.updateStatus(ctx, st, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.DrainStatus, s.DrainMessage = v1alpha1.DrainingComplete, "drained; the agent may configure the node"
		})

	case rollout.ActionRelease, rollout.ActionTimeoutFail:
		// The drain's hold goes (releaseHold: uncordoned first if it was the last hold netshift
		// cordoned the node for, recorded second). Its duration is observed once the release
		// is written: a release that fails is tried again, and must not count twice.
		observe := func(err error) error {
			if started := st.Status.DrainStartedAt; err == nil && started != nil {
				r.Metrics.DrainDuration.WithLabelValues(pool).Observe(now.Sub(started.Time).Seconds())
			}
			return err
		}
		if d.Action == rollout.ActionTimeoutFail {
			logger.Info("drain given up", "reason", d.Reason)
			r.event(node, corev1.EventTypeWarning, "DrainFailed", "Release", "%s; gave up (onTimeout: Fail), its hold released", d.Reason)
			return 0, observe(releaseHold(ctx, r.Client, st, node, v1alpha1.HoldDrain, "", func(s *v1alpha1.NetshiftNodeStateStatus) {
				s.DrainStatus = v1alpha1.DrainIdle
				s.DrainMessage = d.Reason + "; gave up (onTimeout: Fail)"
				s.DrainFailure = &v1alpha1.DrainFailure{Operation: d.Operation, Reason: d.Reason, Time: mnow}
			}))
		}
		logger.Info("slot released")
		r.event(node, corev1.EventTypeNormal, "DrainReleased", "Release", "node %s released its slot in pool %s (operation %s)", d.Node, pool, d.Operation)
		return 0, observe(releaseHold(ctx, r.Client, st, node, v1alpha1.HoldDrain, "", func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.DrainStatus, s.DrainMessage = v1alpha1.DrainIdle, ""
		}))
	}
	return 0, fmt.Errorf("unknown drain action %q", d.Action)
}

// evict asks the Eviction API to remove each pod, so PodDisruptionBudgets
// hold. It returns a description of the evictions a budget refused.
func (r *DrainReconciler) evict(ctx context.Context, node *corev1.Node, pods []corev1.Pod, pool string) (string, error) {
	var blocked []string
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() {
			continue // evicted already; waiting for it to go
		}
		err := r.Client.SubResource("eviction").Create(ctx, p, evictionFor(p))
		switch {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			r.Metrics.EvictionsBlocked.WithLabelValues(pool).Inc()
			blocked = append(blocked, fmt.Sprintf("eviction of pod %s/%s blocked: %s", p.Namespace, p.Name, err.Error()))
			r.event(node, corev1.EventTypeWarning, "EvictionBlocked", "Evict", "eviction of pod %s/%s blocked: %v", p.Namespace, p.Name, err)
		default:
			return "", fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	sort.Strings(blocked)
	return joinLimited(blocked, 3), nil
}

// joinLimited joins at most n messages, so a status stays readable when a
// budget blocks many pods.
func joinLimited(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(s[:n], "; "), len(s)-n)
}
