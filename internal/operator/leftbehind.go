package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/rollout"
)

// leftBehind is where a node a change left behind stands after a pass.
type leftBehind int

const (
	inStep leftBehind = iota
	silent
	held
	rebooting
)

// leaveBehind ends a change's steps for the nodes it leaves behind, as ch
// lists them: silent nodes keep their plan (and, an MTU change's, take a hold
// that cordons them); held nodes take a hold that cordons them and lose their plan;
// rebooting nodes are given back to the drain controller with their Reboot
// operation. Every other node is finished. Each write is idempotent: a pass
// whose status write is lost does the same again.
func (r *LiveChangeReconciler) leaveBehind(ctx context.Context, nodes []corev1.Node, byNode map[string]*v1alpha1.NetshiftNodeState,
	ch *v1alpha1.NetworkChange, network v1alpha1.NodeNetworkConfig) error {
	// A rebooting node gives its hold back: its drain cordons it once its pool has a slot, as
	// any drain's. Cordoning every failed node until then could leave no node for the pods a
	// drain evicts, netshift's own operator among them.
	if err := r.keepOwnPlans(ctx, byNode, ch.Converging, ch.ID); err != nil {
		return err
	}
	if err := r.finish(ctx, nodes, byNode, ch.ID, slices.Concat(ch.Converging, ch.Held)...); err != nil {
		return err
	}
	for _, n := range ch.Held {
		if err := r.holdNode(ctx, n, ch.ID); err != nil {
			return err
		}
	}
	if err := r.cordonSilent(ctx, ch); err != nil {
		return err
	}
	if err := r.removePlans(ctx, byNode, ch.Held); err != nil {
		return err
	}
	for _, n := range ch.Rebooting {
		if err := r.startReboot(ctx, byNode[n], ch, network); err != nil {
			return err
		}
	}
	if ch.T0 != nil {
		ch.Failed = int32(len(ch.Converging) + len(ch.Held) + len(ch.Rebooting))
	}
	return nil
}

// converge follows the nodes a change left behind: a silent node is finished
// once it has run its plan late (or held or rebooted, as any failed node, if
// a step of it failed); a held or rebooting node once a Reboot operation
// succeeded on it; a rebooting node whose reboot failed is held. Every
// decision comes from the nodes' reports and operations, so a pass whose
// status write is lost is run again alike.
func (r *LiveChangeReconciler) converge(ctx context.Context, spec v1alpha1.NetshiftNetworkSpec, st *v1alpha1.NetshiftNetworkStatus) error {
	ch := st.Change
	policy := livechange.PolicyFromSpec(spec.OnFailure, 0)
	network := livechange.NodeConfig(*st.Applied, livechange.FromSpec(spec).Encapsulation)
	next := map[leftBehind][]string{}
	grace := downNodeGrace(spec)
	for _, name := range slices.Concat(ch.Converging, ch.Held, ch.Rebooting) {
		var nns v1alpha1.NetshiftNodeState
		var node corev1.Node
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &nns); err != nil {
			if apierrors.IsNotFound(err) {
				continue // the node is gone
			}
			return err
		}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
			return err
		}
		if ready, since := readiness(&node); slices.Contains(ch.Converging, name) && (livechange.NodeFacts{Ready: ready, Since: since}).Down(r.Now(), grace) {
			// Silent, and now down: it catches up when it is back, and holds no change back meanwhile.
			if err := r.finish(ctx, []corev1.Node{node}, map[string]*v1alpha1.NetshiftNodeState{name: &nns}, ch.ID); err != nil {
				return fmt.Errorf("node %s: %w", name, err)
			}
			ch.Down = livechange.Union(ch.Down, []string{name})
			ch.Message += fmt.Sprintf("; node %s is down: it catches up when it is back", name)
			continue
		}
		now, what, err := r.convergeNode(ctx, ch, &nns, &node, policy, network)
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if what != "" {
			ch.Message += fmt.Sprintf("; node %s %s", name, what)
		}
		if now == inStep && slices.Contains(ch.Converging, name) && nns.Status.LiveChange != nil && nns.Status.LiveChange.ID == ch.ID &&
			!slices.Contains(ch.Late, name) {
			ch.Late = livechange.Union(ch.Late, []string{name})
			ch.Applied++
		}
		if now != inStep {
			next[now] = append(next[now], name)
		}
	}
	ch.Converging, ch.Held, ch.Rebooting = next[silent], next[held], next[rebooting]
	ch.Failed = int32(len(ch.Converging) + len(ch.Held) + len(ch.Rebooting))
	r.settled(st)
	return r.cordonSilent(ctx, ch)
}

// settled ends a change whose last node left behind is back in step: one
// stopped everywhere is RolledBack; one whose every node reported it applied
// every step, some late, is Succeeded, its late nodes named (a node rebooted
// into the values, or gone down to catch up later, did not: that change stays
// Failed, Degraded cleared).
func (r *LiveChangeReconciler) settled(st *v1alpha1.NetshiftNetworkStatus) {
	ch := st.Change
	if ch.Phase != v1alpha1.PhaseFailed || ch.Failed > 0 {
		return
	}
	switch {
	case ch.Rollback != nil && ch.Rollback.All:
		ch.Phase = v1alpha1.PhaseRolledBack
		ch.Message += "; every node is back at the values from before the change"
	case ch.T0 != nil && ch.Rollback == nil && ch.Applied == ch.Nodes && !strings.HasPrefix(ch.Southbound, "Failed"):
		// Every node of the change reported it applied every step, some late.
		applied := livechange.Change{Kind: ch.Kind, From: ch.From, To: ch.To}.Apply(*st.Applied)
		st.Applied = &applied
		ch.Phase = v1alpha1.PhaseSucceeded
		ch.Message = "every node applied every step"
		if len(ch.Late) > 0 {
			ch.Message += fmt.Sprintf(", %s late (silent past the deadline, they ran their steps when they came back)", strings.Join(ch.Late, ", "))
		}
	}
}

// cordonSilent cordons the silent nodes of an MTU change (a pod set up there
// would get the MTU the others' paths may no longer carry) within their
// pools' limits: the nodes this change holds already count, and the others
// wait for a slot, named in the message. A node that is not Ready needs none:
// the node lifecycle controller's taints keep pods off it.
func (r *LiveChangeReconciler) cordonSilent(ctx context.Context, ch *v1alpha1.NetworkChange) error {
	if len(ch.Converging) == 0 || !(livechange.Change{Kind: ch.Kind}).CordonsSilentNodes() {
		return nil
	}
	nodes, cached, m, err := r.poolsView(ctx)
	if err != nil {
		return err
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	holding, want := silentToCordon(ch, byName, cached)
	if len(want) > 0 {
		// Counted again past the cache, which may not show the holds this pass just took:
		// only when there is a node to cordon, not at every report of a large cluster.
		var fresh v1alpha1.NetshiftNodeStateList
		if err := r.APIReader.List(ctx, &fresh); err != nil {
			return err
		}
		holding, want = silentToCordon(ch, byName, &fresh)
	}
	allowed := m.Allow(want, holding)
	for _, n := range allowed {
		if err := r.holdNode(ctx, n, ch.ID); err != nil {
			return err
		}
	}
	if len(allowed) < len(want) {
		ch.Message = addNote(ch.Message, "silent nodes wait for a slot of their pools' maxParallel to be cordoned")
	}
	return nil
}

// convergeNode takes one left-behind node one step on; it returns where the
// node stands and, when that changed, what happened in words.
func (r *LiveChangeReconciler) convergeNode(ctx context.Context, ch *v1alpha1.NetworkChange, nns *v1alpha1.NetshiftNodeState, node *corev1.Node,
	policy livechange.Policy, network v1alpha1.NodeNetworkConfig) (leftBehind, string, error) {
	one := func() error {
		return r.finish(ctx, []corev1.Node{*node}, map[string]*v1alpha1.NetshiftNodeState{nns.Name: nns}, ch.ID)
	}
	toHold := func() error {
		if err := r.holdNode(ctx, nns.Name, ch.ID); err != nil {
			return err
		}
		return r.removePlans(ctx, map[string]*v1alpha1.NetshiftNodeState{nns.Name: nns}, []string{nns.Name})
	}
	switch {
	case slices.Contains(ch.Converging, nns.Name):
		done, failed, how := livechange.CaughtUp(nns, ch)
		switch {
		case !done:
			return silent, "", nil
		case !failed:
			return inStep, how, one()
		case livechange.Off(policy, isControlPlane(node)):
			if err := one(); err != nil {
				return 0, "", err
			}
			return rebooting, how + "; rebooting it into the cluster's values", r.startReboot(ctx, nns, ch, network)
		}
		return held, how + "; held cordoned for a person (" + livechange.HeldWhy(policy) + ")", toHold()
	case slices.Contains(ch.Held, nns.Name):
		if ok, how := livechange.Rebooted(nns, ch); ok {
			return inStep, how, one()
		}
		return held, "", nil
	}
	if ok, how := livechange.Rebooted(nns, ch); ok {
		return inStep, how, one()
	}
	if bad, why := livechange.RebootFailed(nns, ch); bad {
		// Its drain let it go back in service, off the cluster's values.
		return held, fmt.Sprintf("could not be rebooted (%s): held cordoned for a person", why), toHold()
	}
	return rebooting, "", r.startReboot(ctx, nns, ch, network)
}

// holdNode takes node name's LiveChange hold for change id, which cordons it,
// under the ledger and from a fresh read (taking it again changes nothing).
func (r *LiveChangeReconciler) holdNode(ctx context.Context, name, id string) error {
	r.Ledger.Lock()
	defer r.Ledger.Unlock()
	var nns v1alpha1.NetshiftNodeState
	var node corev1.Node
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &nns); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	if h, ok := hold.Of(nns.Status, v1alpha1.HoldLiveChange); (ok && h.ID == id || node.Annotations[hold.NodeAnnotation] == id) && node.Spec.Unschedulable {
		return nil
	}
	h := v1alpha1.NodeHold{Kind: v1alpha1.HoldLiveChange, ID: id, Cordon: true}
	if err := takeHold(ctx, r.Client, &nns, &node, h, r.Now(), nil); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	return nil
}

// removePlans removes the live change plan of the named nodes.
func (r *LiveChangeReconciler) removePlans(ctx context.Context, byNode map[string]*v1alpha1.NetshiftNodeState, names []string) error {
	for _, n := range names {
		nns := byNode[n]
		if nns == nil || nns.Spec.LiveChange == nil {
			continue
		}
		if err := r.setPlan(ctx, nns, nil); err != nil {
			return err
		}
	}
	return nil
}

// startReboot gives the node change ch's Reboot operation into network,
// unless it has it already or another operation is still at work on it (it
// is tried again at the next pass).
func (r *LiveChangeReconciler) startReboot(ctx context.Context, nns *v1alpha1.NetshiftNodeState, ch *v1alpha1.NetworkChange, network v1alpha1.NodeNetworkConfig) error {
	if nns == nil {
		return nil
	}
	nns = nns.DeepCopy() // it may be the cache's own
	id := livechange.RebootOperationID(ch.ID)
	op := nns.Spec.Operation
	if op != nil && op.ID == id {
		return nil
	}
	if op != nil && !operationOver(nns, op.ID) {
		return nil // operation op is still at work: the reboot waits for it
	}
	now := metav1.NewTime(r.Now())
	patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	nns.Spec.Operation = &v1alpha1.NodeOperation{ID: id, Kind: v1alpha1.OperationReboot, RequestedAt: &now, Network: &network,
		Reason: fmt.Sprintf("live change %s: the node could not be brought to MTU %d, port %d live", ch.ID, network.MTU, network.TunnelPort)}
	if err := r.Client.Patch(ctx, nns, patch); err != nil {
		return fmt.Errorf("node %s: start reboot operation %s: %w", nns.Name, id, err)
	}
	log.FromContext(ctx).Info("rebooting a node through the drain controller", "node", nns.Name, "operation", id)
	return nil
}

// isControlPlane says whether the node carries a control-plane role label.
func isControlPlane(n *corev1.Node) bool {
	for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"} {
		if _, ok := n.Labels[l]; ok {
			return true
		}
	}
	return false
}

// operationOver says whether the agent has ended operation id on the node.
func operationOver(nns *v1alpha1.NetshiftNodeState, id string) bool {
	st := nns.Status
	return st.SyncOperation == id && (st.SyncStatus == v1alpha1.SyncSucceeded || st.SyncStatus == v1alpha1.SyncFailed)
}

// silentToCordon are the nodes holding change ch's cordon, and its silent
// nodes still to be cordoned (Ready ones), as states show them.
func silentToCordon(ch *v1alpha1.NetworkChange, byName map[string]*corev1.Node, states *v1alpha1.NetshiftNodeStateList) (holding, want []string) {
	for i := range states.Items {
		if h, ok := hold.Of(states.Items[i].Status, v1alpha1.HoldLiveChange); ok && h.ID == ch.ID {
			holding = append(holding, states.Items[i].Name)
		}
	}
	for _, n := range ch.Converging {
		if node := byName[n]; node != nil && !slices.Contains(holding, n) {
			if ready, _ := readiness(node); ready {
				want = append(want, n)
			}
		}
	}
	return holding, want
}

// poolsView reads, from the cache, the nodes, their states and which pool
// owns each node with its limit.
func (r *LiveChangeReconciler) poolsView(ctx context.Context) (*corev1.NodeList, *v1alpha1.NetshiftNodeStateList, rollout.Membership, error) {
	var nodes corev1.NodeList
	var states v1alpha1.NetshiftNodeStateList
	var pools v1alpha1.NetshiftNodePoolList
	// Not copied out of the cache: nothing here changes them (setPlan writes a copy).
	for _, l := range []client.ObjectList{&nodes, &states, &pools} {
		if err := r.Client.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, rollout.Membership{}, err
		}
	}
	m, _ := MembershipHolding(nodes.Items, pools.Items)
	return &nodes, &states, m, nil
}
