package operator

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/zones"
)

// CentralSide starts and retires the central NB/SB databases and ovn-northd
// that the legacy and single-zone layouts run on. Both must be idempotent.
type CentralSide interface {
	Ensure(ctx context.Context) error
	Retire(ctx context.Context) error
}

// ZoneReconciler moves the cluster between OVN interconnect layouts: it reads
// the ConfigMap, the nodes' zone annotations and the moves in progress, asks
// zones.Decide for the next step and takes it: the ConfigMap of an upgrade's
// single-zone step, the central side, and node moves (cordon, no eviction,
// then the node's NodeNetworkState spec.zone for its agent; uncordon once the
// agent annotated the node). With Enabled false it only reports.
type ZoneReconciler struct {
	Client client.Client
	// APIReader reads the ClusterNetwork past the cache: the central side's
	// state in its status must be the latest, or a retire would run twice.
	APIReader client.Reader
	// Namespace holds the ConfigMap ovn-interconnect-configuration.
	Namespace string
	Central   CentralSide
	Enabled   bool
	Now       func() time.Time
	// Passes counts completed passes (netshift_zone_passes_total); nil counts nothing.
	Passes prometheus.Counter
}

var zonesKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "zones"}}

func (r *ZoneReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{zonesKey}
	})
	ourConfigMap := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetName() == zones.ConfigMapName
	})
	return ctrl.NewControllerManagedBy(mgr).Named("zones").
		Watches(&corev1.Node{}, all).
		Watches(&corev1.ConfigMap{}, all, builder.WithPredicates(ourConfigMap)).
		Watches(&v1alpha1.NodeNetworkState{}, all).
		Watches(&v1alpha1.NodePool{}, all).
		Watches(&v1alpha1.ClusterNetwork{}, all).
		Complete(r)
}

func (r *ZoneReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if r.Passes != nil {
		defer r.Passes.Inc()
	}
	logger := log.FromContext(ctx).WithName("zones")
	var cn v1alpha1.ClusterNetwork
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterNetworkName}, &cn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := &v1alpha1.ZonesStatus{}
	if cn.Status.Zones != nil {
		st = cn.Status.Zones.DeepCopy()
	}
	state, nodeStates, err := r.read(ctx, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	var cm corev1.ConfigMap
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: zones.ConfigMapName}, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	present := err == nil && cm.DeletionTimestamp == nil
	cfg, cfgErr := zones.ParseConfig(present, cm.Data)
	st.Current, st.Nodes = string(zones.Current(state.Nodes)), int32(len(state.Nodes))
	if cfgErr != nil {
		// An invalid value changes nothing: it is reported, and the rollout waits for a fix.
		st.Phase, st.Message = "InvalidConfig", cfgErr.Error()
		r.setCondition(st, v1alpha1.ZonesConfigValid, metav1.ConditionFalse, v1alpha1.ReasonInvalidConfig, cfgErr.Error(), cn.Generation)
		return ctrl.Result{}, r.writeStatus(ctx, &cn, st)
	}
	r.setCondition(st, v1alpha1.ZonesConfigValid, metav1.ConditionTrue, v1alpha1.ReasonValid, fmt.Sprintf("%s/%s: %s", r.Namespace, zones.ConfigMapName, describe(cfg)), cn.Generation)
	state.Config = cfg
	d := zones.Decide(state)
	st.Desired, st.Next, st.Phase, st.Message = string(d.Desired), string(d.Next), d.Phase, d.Holding
	if d.Holding != "" && d.Phase != "WaitingForRollout" {
		st.Phase = "Holding"
	}
	st.Moving, st.InTarget = movingAndInTarget(state.Nodes, d.Next)
	if !r.Enabled {
		st.Phase, st.Message = "Disabled", "zone migration is off (operator flag --zone-migration): the layout is reported, nothing is changed"
		r.setCondition(st, v1alpha1.ZonesConverged, boolCondition(st.Current == st.Desired), v1alpha1.ReasonDisabled, st.Message, cn.Generation)
		return ctrl.Result{}, r.writeStatus(ctx, &cn, st)
	}

	// Finished moves first: the agent annotated its node, so its cordon goes.
	for _, n := range state.Nodes {
		nns := nodeStates[n.Name]
		if nns != nil && nns.Status.ZoneCordoned != "" && n.Zone == nns.Status.ZoneCordoned {
			if err := r.uncordon(ctx, nns); err != nil {
				return ctrl.Result{}, err
			}
			logger.Info("node moved", "node", n.Name, "zone", n.Zone)
		}
	}
	if d.WriteIntermediate {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: zones.ConfigMapName, Namespace: r.Namespace,
			Annotations: map[string]string{"netshift.io/written-by": "netshift: the single-zone step of the upgrade to multizone"}},
			Data: zones.IntermediateData()}
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("zones: record the upgrade's single-zone step: %w", err)
		}
		logger.Info("upgrade from the legacy layout: single zone first", "configmap", r.Namespace+"/"+zones.ConfigMapName)
	}
	if err := r.centralStep(ctx, &cn, st, d.Central); err != nil {
		return ctrl.Result{}, err
	}
	names := make([]string, 0, len(d.Move))
	for n := range d.Move {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := r.startMove(ctx, nodeStates[name], name, d.Move[name]); err != nil {
			return ctrl.Result{}, err
		}
		st.Moving = append(st.Moving, name)
		logger.Info("moving node", "node", name, "zone", d.Move[name])
	}
	if d.DeleteConfig {
		if err := r.Client.Delete(ctx, &cm); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("zones: delete the upgrade's ConfigMap: %w", err)
		}
		logger.Info("upgrade to multizone done: its ConfigMap is deleted")
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
	return ctrl.Result{RequeueAfter: 30 * time.Second}, r.writeStatus(ctx, &cn, st)
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

// centralStep starts or retires the central side as decided, recording it in
// st (and the error, when it fails, in the status at once).
func (r *ZoneReconciler) centralStep(ctx context.Context, cn *v1alpha1.ClusterNetwork, st *v1alpha1.ZonesStatus, step zones.CentralAction) error {
	act, verb, after := r.Central.Ensure, "starting", zones.CentralRunning
	switch step {
	case zones.CentralEnsure:
	case zones.CentralRetire:
		act, verb, after = r.Central.Retire, "retiring", zones.CentralRetired
	default:
		return nil
	}
	log.FromContext(ctx).WithName("zones").Info(verb + " the central side")
	if err := act(ctx); err != nil {
		st.Message = verb + " the central databases and ovn-northd: " + err.Error()
		_ = r.writeStatus(ctx, cn, st)
		return err
	}
	st.Central = string(after)
	return nil
}

// read builds the decision's state from the nodes, their NodeNetworkStates and pools.
func (r *ZoneReconciler) read(ctx context.Context, st *v1alpha1.ZonesStatus) (zones.State, map[string]*v1alpha1.NodeNetworkState, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return zones.State{}, nil, err
	}
	var states v1alpha1.NodeNetworkStateList
	if err := r.Client.List(ctx, &states); err != nil {
		return zones.State{}, nil, err
	}
	byName := map[string]*v1alpha1.NodeNetworkState{}
	for i := range states.Items {
		byName[states.Items[i].Name] = &states.Items[i]
	}
	var s zones.State
	for _, n := range nodes.Items {
		zn := zones.Node{Name: n.Name, Zone: n.Annotations[zones.ZoneAnnotation], Ready: nodeReady(&n)}
		if nns := byName[n.Name]; nns != nil {
			zn.Target = nns.Spec.Zone
		}
		s.Nodes = append(s.Nodes, zn)
	}
	var nps v1alpha1.NodePoolList
	if err := r.Client.List(ctx, &nps); err != nil {
		return zones.State{}, nil, err
	}
	// A pool whose spec cannot be used holds the nodes it might own (no move starts there);
	// the drain controller reports it in the pool's status.
	s.Pools, _ = MembershipHolding(nodes.Items, nps.Items)
	switch {
	case st.Central != "":
		s.Central = zones.Central(st.Central)
	case zones.Current(s.Nodes) == zones.Multi:
		s.Central = zones.CentralRetired
	default: // the legacy and single-zone layouts run on the central side
		s.Central = zones.CentralRunning
	}
	st.Central = string(s.Central)
	return s, byName, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startMove cordons the node (recorded first, so a restarted operator
// uncordons only what it cordoned; no pod is evicted) and asks its agent to
// move it.
func (r *ZoneReconciler) startMove(ctx context.Context, nns *v1alpha1.NodeNetworkState, node, zone string) error {
	if nns == nil {
		return fmt.Errorf("node %s: no NodeNetworkState yet to ask its agent for zone %s", node, zone)
	}
	var n corev1.Node
	if err := r.Client.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
		return err
	}
	if !n.Spec.Unschedulable || nns.Status.ZoneCordoned != "" {
		patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		nns.Status.ZoneCordoned = zone
		if err := r.Client.Status().Patch(ctx, nns, patch); err != nil {
			return fmt.Errorf("node %s: record the zone move's cordon: %w", node, err)
		}
		if !n.Spec.Unschedulable {
			p := client.MergeFrom(n.DeepCopy())
			n.Spec.Unschedulable = true
			if err := r.Client.Patch(ctx, &n, p); err != nil {
				return fmt.Errorf("node %s: cordon for its move to zone %s: %w", node, zone, err)
			}
		}
	}
	patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	nns.Spec.Zone = zone
	if err := r.Client.Patch(ctx, nns, patch); err != nil {
		return fmt.Errorf("node %s: ask its agent for zone %s: %w", node, zone, err)
	}
	return nil
}

func (r *ZoneReconciler) uncordon(ctx context.Context, nns *v1alpha1.NodeNetworkState) error {
	var n corev1.Node
	if err := r.Client.Get(ctx, types.NamespacedName{Name: nns.Name}, &n); err != nil {
		return err
	}
	if n.Spec.Unschedulable {
		p := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = false
		if err := r.Client.Patch(ctx, &n, p); err != nil {
			return fmt.Errorf("node %s: uncordon after its zone move: %w", n.Name, err)
		}
	}
	patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	nns.Status.ZoneCordoned = ""
	return r.Client.Status().Patch(ctx, nns, patch)
}

func (r *ZoneReconciler) setCondition(st *v1alpha1.ZonesStatus, typ string, status metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(r.Now())})
}

func (r *ZoneReconciler) writeStatus(ctx context.Context, cn *v1alpha1.ClusterNetwork, st *v1alpha1.ZonesStatus) error {
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

// CommandCentral runs commands (sh -c) to start and retire the central side.
type CommandCentral struct{ EnsureCommand, RetireCommand string }

func (c CommandCentral) Ensure(ctx context.Context) error {
	return runCentral(ctx, "start", c.EnsureCommand)
}
func (c CommandCentral) Retire(ctx context.Context) error {
	return runCentral(ctx, "retire", c.RetireCommand)
}

func runCentral(ctx context.Context, what, command string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s the central side: %q: %w: %s", what, command, err, strings.TrimSpace(string(out)))
	}
	return nil
}
