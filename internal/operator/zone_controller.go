package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/zones"
)

// ZonePlugin names the network plugin's objects a zone move acts on: the pods
// of its DaemonSet on each node and the Deployment of its central side.
type ZonePlugin struct {
	// Namespace holds both.
	Namespace string
	// NodePods selects the DaemonSet's pods (one per node).
	NodePods labels.Selector
	// Central is the name of the Deployment that runs the central NB/SB
	// databases and ovn-northd; Replicas how many pods it runs when started.
	Central  string
	Replicas int32
	// Interconnect turns the plugin's interconnect on (the first step out of
	// the legacy layout); nil when its pods always run with it.
	Interconnect netplugin.Interconnect
	// MoveTimeout is how long a restarted plugin pod may take to annotate its
	// node before the move is reported held.
	MoveTimeout time.Duration
	// LeftCentral are node annotations that follow a moved node's zone
	// (netplugin.Zones, zones.FollowZone).
	LeftCentral []string
	// Settle is how long after a node's move ends no other move starts and
	// the central side is left alone: the plugin's other nodes take the
	// move in meanwhile, and one whose plugin pod restarted then would not
	// learn where the node went until its new pod ran. 0: no wait.
	Settle time.Duration
}

// ZoneReconciler moves the cluster between OVN interconnect layouts: it reads
// the ConfigMap, the nodes' zone labels and annotations, the network plugin's
// pods and central Deployment, asks zones.Decide for the next step and takes
// it: the ConfigMap of an upgrade's single-zone step, the central side
// (scaled up or to 0), and node moves (cordon, no eviction; the zone label;
// the node's plugin pod deleted so the DaemonSet starts one that joins that
// zone; uncordon once it annotated the node). It never waits inside a pass:
// each pass acts on what it reads and returns. With Enabled false it only
// reports.
type ZoneReconciler struct {
	Client client.Client
	// APIReader reads the NetshiftNetwork past the cache, so a status write
	// never goes back to an older one.
	APIReader client.Reader
	// Namespace holds the ConfigMap ovn-interconnect-configuration.
	Namespace string
	Plugin    ZonePlugin
	Enabled   bool
	Now       func() time.Time
	// Passes counts completed passes (netshift_zone_passes_total); nil counts nothing.
	Passes prometheus.Counter
	// Ledger serializes a move's start and end with every other take and release of a node's hold.
	Ledger *Ledger
	// lastMove is the last move this operator ended, for Plugin.Settle (a
	// restarted operator does not wait for a move its predecessor ended).
	lastMove endedMove
}

type endedMove struct {
	node string
	at   time.Time
}

var zonesKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "zones"}}

func (r *ZoneReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{zonesKey}
	})
	ourConfigMap := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetName() == zones.ConfigMapName
	})
	pluginPods := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Plugin.Namespace && r.Plugin.NodePods != nil && r.Plugin.NodePods.Matches(labels.Set(o.GetLabels()))
	})
	central := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Plugin.Namespace && o.GetName() == r.Plugin.Central
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("zones").
		Watches(&corev1.Node{}, all, builder.WithPredicates(onUpdate(zoneNodeChanged(r.Enabled)))).
		Watches(&corev1.ConfigMap{}, all, builder.WithPredicates(ourConfigMap)).
		Watches(&corev1.Pod{}, all, builder.WithPredicates(pluginPods)).
		Watches(&v1alpha1.NetshiftNodeState{}, all, builder.WithPredicates(onUpdate(stateChangedBeyondALiveChange))).
		Watches(&v1alpha1.NetshiftNodePool{}, all).
		Watches(&v1alpha1.NetshiftNetwork{}, all, builder.WithPredicates(onUpdate(networkChangedBeyondItsStatus)))
	if r.Enabled && r.Plugin.Central != "" {
		// Only an operator that moves zones may read the plugin's Deployment
		// (config/components/ovn-zones grants it); a cluster without
		// OVN-Kubernetes has no such namespace.
		b = b.Watches(&appsv1.Deployment{}, all, builder.WithPredicates(central))
	}
	return b.Complete(r)
}

func (r *ZoneReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if r.Passes != nil {
		defer r.Passes.Inc()
	}
	var cn v1alpha1.NetshiftNetwork
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := &v1alpha1.ZonesStatus{}
	if cn.Status.Zones != nil {
		st = cn.Status.Zones.DeepCopy()
	}
	cl, err := r.read(ctx)
	if err != nil {
		st.Message = err.Error() // what stops the controller is in the status, not only in its log
		_ = r.writeStatus(ctx, &cn, st)
		return ctrl.Result{}, err
	}
	state := cl.state
	st.Central = string(state.Central)
	var cm corev1.ConfigMap
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: zones.ConfigMapName}, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	present := err == nil && cm.DeletionTimestamp == nil
	cfg, cfgErr := zones.ParseConfig(present, cm.Data)
	st.Current, st.Nodes = string(zones.Layout(state)), int32(len(state.Nodes))
	if cfgErr != nil {
		// An invalid value changes nothing: it is reported, and the rollout waits for a fix.
		st.Phase, st.Message = "InvalidConfig", cfgErr.Error()
		r.setCondition(st, v1alpha1.ZonesConfigValid, metav1.ConditionFalse, v1alpha1.ReasonInvalidConfig, cfgErr.Error(), cn.Generation)
		return ctrl.Result{}, r.writeStatus(ctx, &cn, st)
	}
	r.setCondition(st, v1alpha1.ZonesConfigValid, metav1.ConditionTrue, v1alpha1.ReasonValid, fmt.Sprintf("%s/%s: %s", r.Namespace, zones.ConfigMapName, describe(cfg)), cn.Generation)
	state.Config = cfg
	var recheck time.Duration
	if r.Enabled {
		// A move's plugin pod that fails or is overdue holds the rollout:
		// decided before Decide, which keeps the held node's slot.
		recheck = r.pluginSteps(cl)
		var left time.Duration
		state.Settling, left = r.settling(cl)
		if left > 0 && (recheck == 0 || left < recheck) {
			recheck = left
		}
	}
	d := zones.Decide(state)
	st.Desired, st.Next, st.Phase, st.Message = string(d.Desired), string(d.Next), d.Phase, d.Holding
	if d.Central == zones.CentralInterconnect {
		st.Message = "turning the network plugin's interconnect on, which restarts its pods"
	}
	if d.Holding != "" && d.Phase != "WaitingForRollout" && d.Phase != "WaitingForPlugin" {
		st.Phase = "Holding"
	}
	st.Moving, st.InTarget = movingAndInTarget(state.Nodes, d.Next)
	st.Held = heldNodes(state.Nodes)
	if !r.Enabled {
		st.Phase, st.Message = "Disabled", "zone migration is off (operator flag --zone-migration): the layout is reported, nothing is changed"
		r.setCondition(st, v1alpha1.ZonesConverged, boolCondition(st.Current == st.Desired), v1alpha1.ReasonDisabled, st.Message, cn.Generation)
		return ctrl.Result{}, r.writeStatus(ctx, &cn, st)
	}

	if err := r.act(ctx, cl, d, st, &cm); err != nil {
		// A step that fails is in the status at once, in the words of its error.
		st.Phase, st.Message = "Holding", err.Error()
		_ = r.writeStatus(ctx, &cn, st)
		return ctrl.Result{}, err
	}
	if d.Done {
		r.setCondition(st, v1alpha1.ZonesConverged, metav1.ConditionTrue, v1alpha1.ReasonConverged, fmt.Sprintf("every node is in its %s zone and the central side is %s", d.Desired, st.Central), cn.Generation)
	} else {
		msg := fmt.Sprintf("%s: %d of %d nodes in their %s zone", st.Phase, st.InTarget, st.Nodes, d.Next)
		if d.Holding != "" {
			msg += "; " + d.Holding
		}
		r.setCondition(st, v1alpha1.ZonesConverged, metav1.ConditionFalse, st.Phase, msg, cn.Generation)
	}
	after := 30 * time.Second
	if recheck > 0 && recheck < after {
		after = recheck
	}
	return ctrl.Result{RequeueAfter: after}, r.writeStatus(ctx, &cn, st)
}

// act takes the steps d decided, in order: finished moves uncordoned, the
// upgrade's ConfigMap, the central side, new moves, every move's plugin pod
// restart, the ConfigMap deleted at the end of an upgrade.
func (r *ZoneReconciler) act(ctx context.Context, cl *cluster, d zones.Decision, st *v1alpha1.ZonesStatus, cm *corev1.ConfigMap) error {
	logger := log.FromContext(ctx).WithName("zones")
	// Finished moves first: the plugin pod annotated its node, so its hold goes.
	ended, err := r.finishMoves(ctx, finishing(cl))
	if len(ended) > 0 {
		r.lastMove = endedMove{node: ended[len(ended)-1], at: r.Now()}
	}
	if err != nil {
		return err
	}
	if d.WriteIntermediate {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: zones.ConfigMapName, Namespace: r.Namespace,
			Annotations: map[string]string{"netshift.io/written-by": "netshift: the single-zone step of the upgrade to multizone"}},
			Data: zones.IntermediateData()}
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("zones: record the upgrade's single-zone step: %w", err)
		}
		logger.Info("upgrade from the legacy layout: single zone first", "configmap", r.Namespace+"/"+zones.ConfigMapName)
	}
	if err := r.centralStep(ctx, cl.central, st, d.Central); err != nil {
		return err
	}
	if err := r.startMoves(ctx, cl, d.Move, st); err != nil {
		return err
	}
	// Every move in progress (those just started too) gets its plugin pod restarted once.
	for _, n := range cl.state.Nodes {
		zone := n.Target
		if z, ok := d.Move[n.Name]; ok {
			zone = z
		}
		if step, ok := cl.steps[n.Name]; ok && (step.Record || step.Delete != nil) {
			if err := r.restartPlugin(ctx, cl.nodeStates[n.Name], n.Name, zone, step); err != nil {
				return err
			}
		}
	}
	if d.DeleteConfig {
		if err := r.Client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("zones: delete the upgrade's ConfigMap: %w", err)
		}
		logger.Info("upgrade to multizone done: its ConfigMap is deleted")
	}
	return nil
}

// movingAndInTarget are the nodes with a move in progress, and how many are
// in their zone of next.
func movingAndInTarget(nodes []zones.Node, next zones.Mode) (moving []string, inTarget int32) {
	for _, n := range nodes {
		if n.Moving() {
			moving = append(moving, n.Name)
		}
		if n.Zone == zones.ZoneFor(next, n.Name) {
			inTarget++
		}
	}
	return moving, inTarget
}

func heldNodes(nodes []zones.Node) []v1alpha1.ZoneHold {
	var out []v1alpha1.ZoneHold
	for _, n := range nodes {
		if n.Moving() && n.Held != "" {
			out = append(out, v1alpha1.ZoneHold{Node: n.Name, Reason: n.Held})
		}
	}
	return out
}

// cluster is what a pass reads.
type cluster struct {
	state      zones.State
	nodeStates map[string]*v1alpha1.NetshiftNodeState
	// pods are the plugin pods by node.
	pods map[string][]corev1.Pod
	// central is the central side's Deployment, nil when there is none.
	central *appsv1.Deployment
	// steps are the plugin steps of the moves in progress, by node.
	steps map[string]zones.PluginStep
}

// read builds the decision's state from the nodes, their NetshiftNodeStates,
// the pools and the network plugin's objects.
func (r *ZoneReconciler) read(ctx context.Context) (*cluster, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	var states v1alpha1.NetshiftNodeStateList
	if err := r.Client.List(ctx, &states); err != nil {
		return nil, err
	}
	cl := &cluster{nodeStates: map[string]*v1alpha1.NetshiftNodeState{}, pods: map[string][]corev1.Pod{}, steps: map[string]zones.PluginStep{}}
	for i := range states.Items {
		cl.nodeStates[states.Items[i].Name] = &states.Items[i]
	}
	// By name: a cache lists in no set order, and the status lists (moving,
	// held) must not reorder from one pass to the next.
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes.Items {
		cl.state.Nodes = append(cl.state.Nodes, zones.Node{Name: n.Name, Zone: n.Annotations[zones.ZoneAnnotation], Ready: nodeReady(&n),
			Target: n.Labels[zones.ZoneLabel]})
	}
	var nps v1alpha1.NetshiftNodePoolList
	if err := r.Client.List(ctx, &nps); err != nil {
		return nil, err
	}
	// A pool whose spec cannot be used holds the nodes it might own (no move starts there);
	// the drain controller reports it in the pool's status.
	cl.state.Pools, _ = MembershipHolding(nodes.Items, nps.Items)
	cl.state.Busy = map[string]bool{}
	for name, nns := range cl.nodeStates {
		s := nns.Status.DeepCopy()
		hold.Adopt(s, r.Now()) // counted as the ledger will hold it once written
		if hold.Busy(*s, v1alpha1.HoldZoneMove) {
			cl.state.Busy[name] = true
		}
	}
	if r.Plugin.NodePods != nil {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(r.Plugin.Namespace), client.MatchingLabelsSelector{Selector: r.Plugin.NodePods}); err != nil {
			return nil, fmt.Errorf("zones: list the network plugin's pods: %w", err)
		}
		for _, p := range pods.Items {
			cl.pods[p.Spec.NodeName] = append(cl.pods[p.Spec.NodeName], p)
		}
	}
	if r.Plugin.Interconnect != nil {
		on, restarting, err := r.Plugin.Interconnect.On(ctx)
		switch {
		case err != nil && r.Enabled:
			return nil, fmt.Errorf("zones: does the network plugin run with interconnect: %w", err)
		case err != nil: // only reporting: the layout is the nodes' annotations'
			log.FromContext(ctx).WithName("zones").V(1).Info("cannot tell whether the network plugin runs with interconnect", "error", err.Error())
		default:
			cl.state.NoInterconnect, cl.state.Restarting = !on, restarting
		}
	}
	switch dep, err := r.centralDeployment(ctx); {
	case err != nil:
		return nil, err
	case dep != nil:
		cl.central = dep
		cl.state.Central = zones.CentralOf(dep)
	case zones.Layout(cl.state) == zones.Multi:
		cl.state.Central = zones.CentralRetired
	default: // no Deployment to read: the legacy and single-zone layouts run on the central side
		cl.state.Central = zones.CentralRunning
	}
	return cl, nil
}

func (r *ZoneReconciler) centralDeployment(ctx context.Context) (*appsv1.Deployment, error) {
	if r.Plugin.Central == "" || !r.Enabled {
		return nil, nil
	}
	var dep appsv1.Deployment
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Plugin.Namespace, Name: r.Plugin.Central}, &dep)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zones: read the central side's Deployment %s/%s: %w", r.Plugin.Namespace, r.Plugin.Central, err)
	}
	return &dep, nil
}

// pluginSteps decides each move's plugin step and marks the held nodes;
// it returns when to look again for a move that may become overdue.
func (r *ZoneReconciler) pluginSteps(cl *cluster) time.Duration {
	var recheck time.Duration
	for i := range cl.state.Nodes {
		n := &cl.state.Nodes[i]
		if !n.Moving() {
			continue
		}
		step := r.pluginStep(cl, n.Name, n.Target)
		n.Held = step.Held
		cl.steps[n.Name] = step
		if step.Recheck > 0 && (recheck == 0 || step.Recheck < recheck) {
			recheck = step.Recheck
		}
	}
	return recheck
}

// finishing are the nodes whose move ends in this pass: their plugin pod
// annotated them in the zone they are labelled for.
func finishing(cl *cluster) []string {
	var out []string
	for _, n := range cl.state.Nodes {
		if movedInto(statusOf(cl.nodeStates[n.Name]), n.Zone) && n.Zone == n.Target {
			out = append(out, n.Name)
		}
	}
	return out
}

// settling says which node's move the plugin's other nodes may still be
// taking in (zones.State.Settling), and how long until they have had
// Plugin.Settle: a move that ends in this pass, or ended less than that ago.
func (r *ZoneReconciler) settling(cl *cluster) (string, time.Duration) {
	if r.Plugin.Settle <= 0 {
		return "", 0
	}
	if ending := finishing(cl); len(ending) > 0 {
		return fmt.Sprintf("node %s's move ends now: the other nodes take it in, %s (--zone-move-settle)",
			strings.Join(ending, ", "), r.Plugin.Settle), r.Plugin.Settle
	}
	ago := r.Now().Sub(r.lastMove.at)
	if r.lastMove.node == "" || ago >= r.Plugin.Settle {
		return "", 0
	}
	left := r.Plugin.Settle - ago
	return fmt.Sprintf("node %s's move ended: the other nodes take it in, %s more (--zone-move-settle %s)",
		r.lastMove.node, left.Round(100*time.Millisecond), r.Plugin.Settle), left
}

func (r *ZoneReconciler) pluginStep(cl *cluster, node, zone string) zones.PluginStep {
	var rec *zones.Restart
	if nns := cl.nodeStates[node]; nns != nil && nns.Status.ZoneRestart != nil {
		zr := nns.Status.ZoneRestart
		rec = &zones.Restart{Zone: zr.Zone, PodUID: zr.PodUID, At: zr.At.Time}
	}
	return zones.NextPluginStep(zone, cl.pods[node], rec, r.Now(), r.Plugin.MoveTimeout)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// centralStep scales the central side's Deployment up or to 0 as decided; the
// Deployment's status says when it is done, on a later pass.
func (r *ZoneReconciler) centralStep(ctx context.Context, dep *appsv1.Deployment, st *v1alpha1.ZonesStatus, step zones.CentralAction) error {
	var replicas int32
	switch step {
	case zones.CentralInterconnect:
		did, err := r.Plugin.Interconnect.Enable(ctx)
		if err != nil {
			return fmt.Errorf("zones: turn the network plugin's interconnect on: %w", err)
		}
		if did != "" {
			log.FromContext(ctx).WithName("zones").Info("interconnect turned on", "did", did)
		}
		return nil
	case zones.CentralEnsure:
		replicas = max(r.Plugin.Replicas, 1)
	case zones.CentralRetire:
	default:
		return nil
	}
	name := r.Plugin.Namespace + "/" + r.Plugin.Central
	if dep == nil {
		return fmt.Errorf("zones: the central side's Deployment %s is not there: it cannot be %s", name,
			map[zones.CentralAction]string{zones.CentralEnsure: "started", zones.CentralRetire: "retired"}[step])
	}
	if dep.Spec.Replicas != nil && *dep.Spec.Replicas == replicas {
		return nil // asked already; its status tells when it is done
	}
	log.FromContext(ctx).WithName("zones").Info("scaling the central side", "deployment", name, "replicas", replicas)
	// Through the scale subresource: the operator may change the Deployment's replicas and nothing else.
	scale := &autoscalingv1.Scale{}
	body := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	if err := r.Client.SubResource("scale").Patch(ctx, dep, body, client.WithSubResourceBody(scale)); err != nil {
		return fmt.Errorf("zones: scale the central side's Deployment %s to %d: %w", name, replicas, err)
	}
	// Asked, not done: its status says when it is (a later pass).
	st.Central = string(map[zones.CentralAction]zones.Central{zones.CentralEnsure: zones.CentralStarting, zones.CentralRetire: zones.CentralRetiring}[step])
	return nil
}

// startMoves starts the moves Decide picked, in name order, under the
// ledger: each pool's busy nodes are counted again from the API server (the
// cache may not show a drain granted a moment ago), and a move that no longer
// fits waits for a later pass.
func (r *ZoneReconciler) startMoves(ctx context.Context, cl *cluster, moves map[string]string, st *v1alpha1.ZonesStatus) error {
	if len(moves) == 0 {
		return nil
	}
	r.Ledger.Lock()
	defer r.Ledger.Unlock()
	nodes, states, err := freshNodes(ctx, r.Client, r.APIReader, r.Now())
	if err != nil {
		return fmt.Errorf("zones: %w", err)
	}
	fresh := make(map[string]v1alpha1.NetshiftNodeStateStatus, len(states))
	for name, nns := range states {
		fresh[name] = nns.Status
		cl.nodeStates[name] = nns
	}
	pools := cl.state.Pools
	busy := hold.Count(pools.Owner, fresh)
	for _, n := range nodes {
		if nodeMoving(n) && !hold.Busy(fresh[n.Name]) {
			busy[pools.Owner[n.Name]]++ // a move an older operator started and nothing recorded
		}
	}
	names := make([]string, 0, len(moves))
	for n := range moves {
		names = append(names, n)
	}
	sort.Strings(names)
	logger := log.FromContext(ctx).WithName("zones")
	for _, name := range names {
		pool := pools.Owner[name]
		if limit := pools.Limit[pool]; !hold.Busy(fresh[name]) && limit > 0 && busy[pool] >= limit {
			logger.Info("move waits: its pool's slots are taken", "node", name, "pool", pool, "limit", limit)
			st.Message = strings.TrimPrefix(st.Message+fmt.Sprintf("; node %s waits for a slot of pool %s (%d of %d busy: drains and moves count together)",
				name, pool, busy[pool], limit), "; ")
			continue
		}
		if !hold.Busy(fresh[name]) {
			busy[pool]++
		}
		if nodes[name] == nil {
			continue // gone since the pass read it
		}
		if err := r.startMove(ctx, states[name], nodes[name], moves[name]); err != nil {
			return err
		}
		st.Moving = append(st.Moving, name)
		cl.steps[name] = r.pluginStep(cl, name, moves[name])
		logger.Info("moving node", "node", name, "zone", moves[name])
	}
	return nil
}

// startMove takes the node's ZoneMove hold (recorded first, so a restarted
// operator uncordons only what it cordoned; no pod is evicted), then cordons
// and labels it for its zone in one patch; its plugin pod is restarted by
// restartPlugin in the same pass. The caller holds the ledger and read n and
// nns past the cache.
func (r *ZoneReconciler) startMove(ctx context.Context, nns *v1alpha1.NetshiftNodeState, n *corev1.Node, zone string) error {
	if nns == nil {
		return fmt.Errorf("node %s: no NetshiftNodeState yet to record its move to zone %s", n.Name, zone)
	}
	if err := adoptNodeHold(ctx, r.Client, nns, n, r.Now()); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cordon := hold.Take(&nns.Status, v1alpha1.NodeHold{Kind: v1alpha1.HoldZoneMove, ID: zone, Cordon: true}, n.Spec.Unschedulable, r.Now())
	if err := r.Client.Status().Patch(ctx, nns, patch); err != nil {
		return fmt.Errorf("node %s: record its move to zone %s: %w", n.Name, zone, err)
	}
	p := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = n.Spec.Unschedulable || cordon == hold.Set
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[zones.ZoneLabel] = zone
	if err := r.Client.Patch(ctx, n, p); err != nil {
		return fmt.Errorf("node %s: cordon and label %s=%s for its move: %w", n.Name, zones.ZoneLabel, zone, err)
	}
	return nil
}

// restartPlugin records the restart (when the step says so) and deletes the
// node's plugin pod; the DaemonSet starts the one that joins the zone.
func (r *ZoneReconciler) restartPlugin(ctx context.Context, nns *v1alpha1.NetshiftNodeState, node, zone string, step zones.PluginStep) error {
	if nns == nil {
		return fmt.Errorf("node %s: no NetshiftNodeState to record its plugin pod's restart", node)
	}
	if step.Record {
		patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		rec := &v1alpha1.ZoneRestart{Zone: zone, At: metav1.NewTime(r.Now())}
		if step.Delete != nil {
			rec.Pod, rec.PodUID = step.Delete.Namespace+"/"+step.Delete.Name, string(step.Delete.UID)
		}
		nns.Status.ZoneRestart = rec
		if err := r.Client.Status().Patch(ctx, nns, patch); err != nil {
			return fmt.Errorf("node %s: record its plugin pod's restart for zone %s: %w", node, zone, err)
		}
	}
	if step.Delete == nil {
		return nil
	}
	err := r.Client.Delete(ctx, step.Delete, client.Preconditions{UID: &step.Delete.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("node %s: restart its network plugin pod %s/%s for zone %s: %w", node, step.Delete.Namespace, step.Delete.Name, zone, err)
	}
	log.FromContext(ctx).WithName("zones").Info("restarted the network plugin pod", "node", node, "zone", zone,
		"pod", step.Delete.Namespace+"/"+step.Delete.Name)
	return nil
}

// statusOf is a node's NetshiftNodeState status; the zero status when it has
// none yet.
func statusOf(nns *v1alpha1.NetshiftNodeState) v1alpha1.NetshiftNodeStateStatus {
	if nns == nil {
		return v1alpha1.NetshiftNodeStateStatus{}
	}
	return nns.Status
}

// nodeMoving says whether the node is labelled for a zone it has not joined.
func nodeMoving(n *corev1.Node) bool {
	return zones.Node{Zone: n.Annotations[zones.ZoneAnnotation], Target: n.Labels[zones.ZoneLabel]}.Moving()
}

// movedInto says whether the node's state records a move into zone (its
// ZoneMove hold, or the plugin pod restart of an older operator's move): a
// hold for another zone is a move that has only begun.
func movedInto(s v1alpha1.NetshiftNodeStateStatus, zone string) bool {
	if zone == "" {
		return false
	}
	if h, ok := hold.Of(s, v1alpha1.HoldZoneMove); ok {
		return h.ID == zone
	}
	return s.ZoneRestart != nil && s.ZoneRestart.Zone == zone
}

// finishMoves gives back the ZoneMove holds of the nodes the cache shows
// moved, under the ledger and checked again past the cache (uncordoned if no
// other hold needs the cordon), and forgets their moves.
func (r *ZoneReconciler) finishMoves(ctx context.Context, names []string) (ended []string, _ error) {
	if len(names) == 0 {
		return nil, nil
	}
	r.Ledger.Lock()
	defer r.Ledger.Unlock()
	var errs []error
	for _, name := range names {
		var n corev1.Node
		var nns v1alpha1.NetshiftNodeState
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
			return ended, client.IgnoreNotFound(err)
		}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &nns); err != nil {
			return ended, client.IgnoreNotFound(err)
		}
		if err := adoptHolds(ctx, r.Client, &nns, r.Now()); err != nil {
			return ended, err
		}
		zone := n.Annotations[zones.ZoneAnnotation]
		if !movedInto(nns.Status, zone) || n.Labels[zones.ZoneLabel] != zone {
			continue // the cache was behind
		}
		if err := r.followZoneMarks(ctx, &n, zone); err != nil {
			if zone == zones.GlobalZone {
				errs = append(errs, err) // the move ends once the mark is gone; the other nodes' end now
				continue
			}
			// Set early only to save the plugin time: its node pod sets the mark itself.
			log.FromContext(ctx).WithName("zones").Error(err, "the plugin's node pod will mark the node itself, most of a second later", "node", name)
		}
		err := releaseHold(ctx, r.Client, &nns, &n, v1alpha1.HoldZoneMove, "", func(s *v1alpha1.NetshiftNodeStateStatus) { s.ZoneRestart = nil })
		if err != nil {
			return ended, fmt.Errorf("node %s: %w", name, err)
		}
		ended = append(ended, name)
		log.FromContext(ctx).WithName("zones").Info("node moved", "node", name, "zone", zone)
	}
	return ended, errors.Join(errs...)
}

// followZoneMarks makes the plugin's marks of a node's having left the
// central zone (ZonePlugin.LeftCentral) follow the zone its plugin pod has
// just annotated it in (zones.FollowZone says when and why). n is as it was
// when the write fails.
func (r *ZoneReconciler) followZoneMarks(ctx context.Context, n *corev1.Node, zone string) error {
	before := n.DeepCopy()
	p := client.MergeFrom(before)
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if !zones.FollowZone(n.Annotations, r.Plugin.LeftCentral, zone) {
		return nil
	}
	if err := r.Client.Patch(ctx, n, p); err != nil {
		*n = *before
		return fmt.Errorf("node %s, annotated in zone %s by its plugin pod: make %v follow its zone: %w", n.Name, zone, r.Plugin.LeftCentral, err)
	}
	log.FromContext(ctx).WithName("zones").Info("the plugin's marks of the node's leaving the central zone follow its zone", "node", n.Name, "zone", zone, "annotations", r.Plugin.LeftCentral)
	return nil
}

func (r *ZoneReconciler) setCondition(st *v1alpha1.ZonesStatus, typ string, status metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(r.Now())})
}

func (r *ZoneReconciler) writeStatus(ctx context.Context, cn *v1alpha1.NetshiftNetwork, st *v1alpha1.ZonesStatus) error {
	if equality.Semantic.DeepEqual(cn.Status.Zones, st) {
		return nil // nothing new: no write
	}
	patch := client.MergeFrom(cn.DeepCopy())
	cn.Status.Zones = st
	if err := r.Client.Status().Patch(ctx, cn, patch); err != nil {
		return fmt.Errorf("zones: write status: %w", err)
	}
	return nil
}

func boolCondition(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func describe(c zones.Config) string {
	if !c.Present {
		return "absent: multizone"
	}
	if !c.Definitive {
		return fmt.Sprintf("zone-mode %s, definitive: no (netshift's step on the way to multizone)", c.Mode)
	}
	return fmt.Sprintf("zone-mode %s", c.Mode)
}
