// Package status renders `netshift status`: each pool, its nodes and where
// each node's drain and sync stand, readable at a glance.
package status

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/rollout"
	"netshift.io/netshift/internal/zones"
)

// Report is the JSON form of `netshift status`.
type Report struct {
	// Applied is the network in force (NetshiftNetwork status.applied).
	Applied *v1alpha1.AppliedNetwork `json:"applied,omitempty"`
	// Change is the live change in progress, or the last one.
	Change *Change `json:"change,omitempty"`
	// Zones is the OVN interconnect layout and its rollout (NetshiftNetwork status.zones).
	Zones *v1alpha1.ZonesStatus `json:"zones,omitempty"`
	Pools []Pool                `json:"pools"`
	// Problems are what holds netshift back and needs a person: a NetshiftNodePool whose spec cannot be used.
	Problems []string `json:"problems,omitempty"`
	// NoNetwork says why there is no NetshiftNetwork yet: what the operator waits for before it
	// creates one from the nodes' reports (a node's, an agreement).
	NoNetwork string `json:"noNetwork,omitempty"`
}

// Change is a live change as `netshift status` shows it.
type Change struct {
	v1alpha1.NetworkChange `json:",inline"`
	// T0InMs is how long until T0 (negative once passed).
	T0InMs *int64 `json:"t0InMs,omitempty"`
	// Skew is the worst start of a step against its time, from the nodes' reports.
	Skew *Skew `json:"skew,omitempty"`
	// Degraded says why the change, over, still needs a person (the NetshiftNetwork's Degraded
	// condition): it failed or was rolled back while the spec still asks for it, or left nodes behind.
	Degraded string `json:"degraded,omitempty"`
}

// Pool is one pool with its nodes.
type Pool struct {
	Name        string `json:"name"`
	Priority    int32  `json:"priority"`
	MaxParallel string `json:"maxParallel"`
	// Limit is maxParallel resolved against the pool's size (0 = no limit).
	Limit    int    `json:"limit"`
	Draining int    `json:"draining"`
	Nodes    []Node `json:"nodes"`
}

// Node is one node's state.
type Node struct {
	Name         string `json:"name"`
	DrainStatus  string `json:"drainStatus"`
	SyncStatus   string `json:"syncStatus"`
	Operation    string `json:"operation,omitempty"`
	Cordoned     bool   `json:"cordoned"`
	CordonedByUs bool   `json:"cordonedByNetshift"`
	// Holds are what holds the node, each "Kind ID" (e.g. "Drain op-7", "ZoneMove node-1").
	Holds         []string `json:"holds,omitempty"`
	Message       string   `json:"message,omitempty"`
	LastSyncError string   `json:"lastSyncError,omitempty"`
	// LiveChange is the node's progress in the live change, e.g. "ready", "2/3 steps", "done".
	LiveChange string `json:"liveChange,omitempty"`
	// Zone is the node's OVN interconnect zone (its k8s.ovn.org/zone-name annotation), with the
	// zone it is moving to and why that move holds, e.g. "global -> node-1 (held: ...)".
	Zone string `json:"zone,omitempty"`
	// DrainProblem says why the drain of the node's operation needs a person: it was given up,
	// or it is over its timeout.
	DrainProblem string `json:"drainProblem,omitempty"`
}

// Gather reads nodes, pools and NetshiftNodeStates and builds the report.
func Gather(ctx context.Context, c client.Reader) (Report, error) {
	var nodes corev1.NodeList
	var pools v1alpha1.NetshiftNodePoolList
	var states v1alpha1.NetshiftNodeStateList
	if err := c.List(ctx, &nodes); err != nil {
		return Report{}, fmt.Errorf("list nodes: %w", err)
	}
	if err := c.List(ctx, &pools); err != nil {
		return Report{}, fmt.Errorf("list NetshiftNodePools: %w", err)
	}
	if err := c.List(ctx, &states); err != nil {
		return Report{}, fmt.Errorf("list NetshiftNodeStates: %w", err)
	}
	m, invalid := operator.MembershipHolding(nodes.Items, pools.Items)
	var r Report
	for _, ip := range invalid {
		r.Problems = append(r.Problems, ip.Err.Error()+" (the nodes it might own are held: no slot, no zone move)")
	}
	var cn v1alpha1.NetshiftNetwork
	policy := rollout.DefaultDrainPolicy
	err := c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn)
	if apierrors.IsNotFound(err) {
		r.NoNetwork = noNetwork(nodes.Items, states.Items)
	}
	if err == nil {
		r.Applied = cn.Status.Applied
		r.Zones = cn.Status.Zones
		policy = rollout.DrainPolicyFrom(cn.Spec.Drain)
		if ch := cn.Status.Change; ch != nil {
			r.Change = &Change{NetworkChange: *ch, Degraded: degraded(cn.Status)}
			if ch.T0 != nil {
				in := time.Until(ch.T0.Time).Milliseconds()
				r.Change.T0InMs = &in
			}
		}
	}
	if r.Change != nil {
		r.Change.Skew = changeSkew(states.Items, r.Change.ID)
	}
	byName := map[string]*v1alpha1.NetshiftNodeState{}
	for i := range states.Items {
		byName[states.Items[i].Name] = &states.Items[i]
	}
	cordoned := map[string]bool{}
	heldOnNode := map[string]string{} // a live change's hold, recorded on the Node with its cordon
	zoneOf := map[string]string{}
	for _, n := range nodes.Items {
		cordoned[n.Name] = n.Spec.Unschedulable
		heldOnNode[n.Name] = n.Annotations[hold.NodeAnnotation]
		zoneOf[n.Name] = nodeZone(n, r.Zones)
	}
	spec := map[string]v1alpha1.NetshiftNodePool{}
	for _, p := range pools.Items {
		spec[p.Name] = p
	}
	for name, members := range m.Members {
		p := Pool{Name: name, Limit: m.Limit[name], Priority: rollout.DefaultPriority, MaxParallel: "1", Nodes: []Node{}}
		if np, ok := spec[name]; ok {
			if np.Spec.Priority != nil {
				p.Priority = *np.Spec.Priority
			}
			if np.Spec.MaxParallel != nil {
				p.MaxParallel = np.Spec.MaxParallel.String()
			}
		} else {
			p.Priority = 100 // the implicit pool: below every real one
		}
		for _, n := range members {
			// A node netshift has not touched yet is Idle on both counts.
			node := Node{Name: n, Cordoned: cordoned[n], DrainStatus: string(v1alpha1.DrainIdle), SyncStatus: string(v1alpha1.SyncIdle), Zone: zoneOf[n]}
			if st, ok := byName[n]; ok {
				s := st.Status
				if s.DrainStatus != "" {
					node.DrainStatus = string(s.DrainStatus)
				}
				if s.SyncStatus != "" {
					node.SyncStatus = string(s.SyncStatus)
				}
				node.CordonedByUs, node.Message, node.LastSyncError = s.CordonedByNetshift, s.DrainMessage, s.LastSyncError
				if st.Spec.Operation != nil {
					node.Operation = st.Spec.Operation.ID
				}
				for _, h := range s.Holds {
					node.Holds = append(node.Holds, string(h.Kind)+" "+h.ID)
				}
				if id := heldOnNode[n]; id != "" {
					node.Holds = append(node.Holds, string(v1alpha1.HoldLiveChange)+" "+id)
					node.CordonedByUs = node.CordonedByUs || cordoned[n]
				}
				if hold.Busy(s) {
					p.Draining++
				}
				node.LiveChange = liveChangeProgress(st, r.Change)
				node.DrainProblem = drainProblem(st, policy, time.Now())
			}
			p.Nodes = append(p.Nodes, node)
		}
		r.Pools = append(r.Pools, p)
	}
	sort.Slice(r.Pools, func(i, j int) bool {
		if r.Pools[i].Priority != r.Pools[j].Priority {
			return r.Pools[i].Priority < r.Pools[j].Priority
		}
		return r.Pools[i].Name < r.Pools[j].Name
	})
	return r, nil
}

// degraded is why the last change still needs a person: the message of the
// operator's Degraded condition, or, before the operator wrote that
// condition, a change that ended Failed or RolledBack. "" when nothing does.
func degraded(st v1alpha1.NetshiftNetworkStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.NetshiftNetworkDegraded); c != nil {
		if c.Status != metav1.ConditionTrue {
			return ""
		}
		return cmp.Or(c.Message, c.Reason)
	}
	if ch := st.Change; ch != nil && (ch.Phase == v1alpha1.PhaseFailed || ch.Phase == v1alpha1.PhaseRolledBack) {
		return strings.TrimSuffix(fmt.Sprintf("%s %s: %s", ch.ID, ch.Phase, ch.Message), ": ")
	}
	return ""
}

// drainProblem is why the drain of the node's current operation needs a
// person: given up (its DrainFailure names that operation; an older one's no
// longer counts), or still draining past the timeout. "" when neither.
func drainProblem(st *v1alpha1.NetshiftNodeState, policy rollout.DrainPolicy, now time.Time) string {
	s := st.Status
	if f, op := s.DrainFailure, st.Spec.Operation; f != nil && op != nil && f.Operation == op.ID {
		return "given up: " + f.Reason
	}
	if s.DrainStatus == v1alpha1.Draining && policy.Overdue(s, now) {
		return fmt.Sprintf("draining for over its timeout of %s (onTimeout: %s)", policy.Timeout, policy.OnTimeout)
	}
	return ""
}

// nodeZone is the node's zone as `netshift status` shows it: its annotation,
// the zone of its label when that differs (a move in progress), and why the
// move holds. "" for a node with neither (no zones).
func nodeZone(n corev1.Node, z *v1alpha1.ZonesStatus) string {
	zone, target := n.Annotations[zones.ZoneAnnotation], n.Labels[zones.ZoneLabel]
	if target == "" || target == zone {
		return zone
	}
	out := orDash(zone) + " -> " + target
	if z != nil {
		for _, h := range z.Held {
			if h.Node == n.Name {
				out += " (held: " + h.Reason + ")"
			}
		}
	}
	return out
}

// liveChangeProgress summarizes a node's part in the live change, or in its
// rollback, or its reboot after it.
func liveChangeProgress(nns *v1alpha1.NetshiftNodeState, ch *Change) string {
	if ch == nil {
		return ""
	}
	reboot := livechange.RebootOperationID(ch.ID)
	switch op := nns.Spec.Operation; {
	case slices.Contains(ch.Outside, nns.Name):
		return "outside: no agent runs there"
	case slices.Contains(ch.Down, nns.Name):
		return downProgress(nns)
	case slices.Contains(ch.Rebooting, nns.Name):
		return rebootProgress(nns, reboot)
	case slices.Contains(ch.Held, nns.Name) && op != nil && op.ID == reboot:
		return "held for a person: " + rebootProgress(nns, reboot)
	case slices.Contains(ch.Held, nns.Name) && op != nil && op.Kind == v1alpha1.OperationReboot:
		return "held for a person; " + rebootProgress(nns, op.ID)
	case slices.Contains(ch.Held, nns.Name):
		return "held for a person: reboot it into the cluster's values (netshift reconfigure --reboot)"
	case !ch.Phase.Active() && !slices.Contains(ch.Converging, nns.Name):
		return ""
	}
	rep := nns.Status.LiveChange
	what := ""
	switch {
	case rep != nil && rep.ID == livechange.RollbackID(ch.ID):
		what = "rollback "
	case rep == nil || rep.ID != ch.ID:
		return "checking"
	}
	switch {
	case len(rep.Problems) > 0:
		return markBlocked + ": " + strings.Join(rep.Problems, "; ")
	case rep.Done && rep.Failed:
		return what + markFailed + ": " + failedStep(rep)
	case rep.Done:
		return what + "done"
	}
	// The cluster's plan has the change's steps and T0; a node's own plan (its rollback, or
	// the plan it was left with) has its own.
	steps, scheduled := len(ch.Steps), ch.T0 != nil
	if plan := nns.Spec.LiveChange; plan != nil {
		steps, scheduled = len(plan.Steps), plan.T0 != nil
	}
	if scheduled {
		return fmt.Sprintf("%s%d/%d steps", what, len(rep.Steps), steps)
	}
	return "ready"
}

// downProgress is where a node the change went ahead without stands: down,
// or catching up by a plan of its own.
func downProgress(nns *v1alpha1.NetshiftNodeState) string {
	plan, rep := nns.Spec.LiveChange, nns.Status.LiveChange
	switch {
	case plan == nil || !livechange.IsCatchUp(plan.ID):
		return "down: catches up when it is back"
	case rep == nil || rep.ID != plan.ID:
		return fmt.Sprintf("back, catching up (%s %d -> %d): checking", plan.Kind, plan.From, plan.To)
	case len(rep.Problems) > 0:
		return fmt.Sprintf("back, catching up: %s: %s", markBlocked, strings.Join(rep.Problems, "; "))
	case rep.Failed:
		return fmt.Sprintf("back, catching up: %s: %s", markFailed, failedStep(rep))
	}
	return fmt.Sprintf("back, catching up (%s %d -> %d): %d/%d steps", plan.Kind, plan.From, plan.To, len(rep.Steps), len(plan.Steps))
}

// failedStep is the report's failed step and its error.
func failedStep(rep *v1alpha1.LiveChangeReport) string {
	for _, s := range rep.Steps {
		if s.Error != "" {
			return fmt.Sprintf("%s: %s", s.Action, s.Error)
		}
	}
	return "a step failed"
}

// rebootProgress is where the node's Reboot operation id stands.
func rebootProgress(nns *v1alpha1.NetshiftNodeState, id string) string {
	st := nns.Status
	switch {
	case nns.Spec.Operation == nil || nns.Spec.Operation.ID != id:
		return "reboot: waiting to start"
	case st.SyncOperation == id && st.SyncStatus == v1alpha1.SyncFailed:
		return "reboot " + markFailed + ": " + st.LastSyncError
	case st.SyncOperation == id && st.SyncStatus == v1alpha1.SyncSucceeded:
		return "rebooted and checked"
	case st.SyncOperation == id && st.RebootFromBoot != "" && st.DrainOperation == id:
		return "rebooting"
	}
	return "reboot: " + string(st.DrainStatus)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON prints the report as JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// noNetwork is why the operator has not created the NetshiftNetwork: the
// same decision, from the same reports.
func noNetwork(nodes []corev1.Node, states []v1alpha1.NetshiftNodeState) string {
	reports := map[string]*v1alpha1.ObservedNetwork{}
	for _, n := range nodes {
		reports[n.Name] = nil
	}
	for i := range states {
		if _, ok := reports[states[i].Name]; ok {
			reports[states[i].Name] = states[i].Status.Network
		}
	}
	if _, why := livechange.FromNodes(reports); why != "" {
		return why
	}
	return "the nodes agree; the operator creates it at its next look"
}

// WriteText prints a table per pool.
func (r Report) WriteText(w io.Writer) error {
	if r.NoNetwork != "" {
		fmt.Fprintf(w, "NETWORK not created yet: %s\n", r.NoNetwork)
	}
	if a := r.Applied; a != nil {
		fmt.Fprintf(w, "NETWORK mtu %d, vxlanPort %d, genevePort %d\n", a.MTU, a.VXLANPort, a.GenevePort)
	}
	if ch := r.Change; ch != nil {
		fmt.Fprintf(w, "CHANGE %s: %s %d -> %d, %s", ch.ID, ch.Kind, ch.From, ch.To, ch.Phase)
		if ch.T0InMs != nil && ch.Phase.Active() {
			if *ch.T0InMs > 0 {
				fmt.Fprintf(w, ", T0 in %.1f s", float64(*ch.T0InMs)/1000)
			} else {
				fmt.Fprintf(w, ", T0 %.1f s ago", -float64(*ch.T0InMs)/1000)
			}
		}
		fmt.Fprintf(w, " (%d/%d nodes ready, %d applied, %d failed): %s\n", ch.Ready, ch.Nodes, ch.Applied, ch.Failed, ch.Message)
		if ch.Degraded != "" {
			fmt.Fprintf(w, "DEGRADED %s\n", ch.Degraded)
		}
		if sk := ch.Skew; sk != nil {
			fmt.Fprintf(w, "SKEW worst %s on %s %+.3f ms from its time (its thread waited %.3f ms for a processor); nodes %.3f ms apart at most (%d steps)\n",
				sk.Step, sk.Node, float64(sk.LateMicros)/1000, float64(sk.WaitedMicros)/1000, float64(sk.SpreadMicros)/1000, sk.Steps)
		}
	}
	if z := r.Zones; z != nil {
		fmt.Fprintf(w, "ZONES %s, desired %s (next %s), %s, central side %s", z.Current, orDash(z.Desired), orDash(z.Next), orDash(z.Phase), orDash(z.Central))
		if z.Message != "" {
			fmt.Fprintf(w, ": %s", z.Message)
		}
		fmt.Fprintln(w)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM %s\n", p)
	}
	if r.Applied != nil || r.Change != nil || r.Zones != nil || len(r.Problems) > 0 {
		fmt.Fprintln(w)
	}
	if len(r.Pools) == 0 {
		_, err := fmt.Fprintln(w, "no nodes")
		return err
	}
	for i, p := range r.Pools {
		if i > 0 {
			fmt.Fprintln(w)
		}
		limit := fmt.Sprint(p.Limit)
		if p.Limit == 0 {
			limit = "unlimited"
		}
		prio := fmt.Sprint(p.Priority)
		if p.Priority > 99 {
			prio = "-"
		}
		fmt.Fprintf(w, "POOL %s  priority %s  maxParallel %s (%s at once)  %d/%d nodes busy\n", p.Name, prio, p.MaxParallel, limit, p.Draining, len(p.Nodes))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODE\tDRAIN\tSYNC\tOPERATION\tCORDONED\tMESSAGE")
		for _, n := range p.Nodes {
			c := "no"
			if n.Cordoned {
				c = "yes"
				if n.CordonedByUs {
					c = "yes (netshift)"
				}
			}
			if len(n.Holds) > 0 {
				kinds := make([]string, len(n.Holds))
				for i, h := range n.Holds {
					kinds[i], _, _ = strings.Cut(h, " ")
				}
				c += ", held: " + strings.Join(kinds, "+")
			}
			msg := n.Message
			if n.LiveChange != "" {
				msg = strings.TrimSpace("change: " + n.LiveChange + " " + msg)
			}
			if n.LastSyncError != "" {
				msg = strings.TrimSpace(msg + " error: " + n.LastSyncError)
			}
			if n.Zone != "" {
				msg = strings.TrimSpace("zone " + n.Zone + " " + msg)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.DrainStatus, n.SyncStatus, orDash(n.Operation), c, msg)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
