package status

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/rollout"
)

func TestFaults(t *testing.T) {
	idle := Node{Name: "n1", DrainStatus: string(v1alpha1.DrainIdle), SyncStatus: string(v1alpha1.SyncIdle)}
	with := func(change func(*Node)) Report {
		n := idle
		change(&n)
		return Report{Pools: []Pool{{Name: "default", Nodes: []Node{n}}}}
	}
	change := func(phase v1alpha1.ChangePhase, set func(*Change)) Report {
		r := with(func(*Node) {})
		r.Change = &Change{NetworkChange: v1alpha1.NetworkChange{ID: "mtu-1", Phase: phase}}
		set(r.Change)
		return r
	}
	for _, c := range []struct {
		name string
		r    Report
		want []string
	}{
		{"no nodes", Report{}, nil},
		{"healthy", with(func(*Node) {}), nil},
		{"in progress", with(func(n *Node) {
			n.DrainStatus, n.SyncStatus, n.Operation, n.LiveChange = string(v1alpha1.DrainRequired), string(v1alpha1.SyncInProgress), "op-1", "checking"
		}), nil},
		{"done", with(func(n *Node) { n.SyncStatus, n.LiveChange = string(v1alpha1.SyncSucceeded), "rollback done" }), nil},
		{"invalid pool", Report{Problems: []string{"pool p: spec.maxParallel: bad"}}, []string{"NetshiftNodePool: pool p: spec.maxParallel: bad"}},
		{"change scheduled", change(v1alpha1.PhaseScheduled, func(*Change) {}), nil},
		{"change aborted", change(v1alpha1.PhaseAborted, func(*Change) {}), nil},
		{"change failed, reverted", change(v1alpha1.PhaseFailed, func(*Change) {}), nil},
		{"change degraded", change(v1alpha1.PhaseFailed, func(ch *Change) { ch.Degraded = "mtu-1 from 1500 to 1400 failed: n1" }),
			[]string{"change degraded: mtu-1 from 1500 to 1400 failed: n1"}},
		{"change rolling back", change(v1alpha1.PhaseRollingBack, func(*Change) {}), []string{"change mtu-1 is rolling back: nodes failed their steps"}},
		{"node held", change(v1alpha1.PhaseFailed, func(ch *Change) { ch.Held = []string{"n1"} }), []string{"node n1: held for a person"}},
		{"node silent", change(v1alpha1.PhaseFailed, func(ch *Change) { ch.Converging = []string{"n1"} }),
			[]string{"node n1: its agent did not report its part of change mtu-1 in time"}},
		{"step failed", with(func(n *Node) { n.LiveChange = "FAILED: PodMTU: no such device" }), []string{"node n1: change: FAILED: PodMTU: no such device"}},
		{"rollback failed", with(func(n *Node) { n.LiveChange = "rollback FAILED: PodMTU: x" }), []string{"node n1: change: rollback FAILED: PodMTU: x"}},
		{"blocked", with(func(n *Node) { n.LiveChange = "BLOCKED: UDP port 4790 is in use" }), []string{"node n1: change: BLOCKED: UDP port 4790 is in use"}},
		{"sync failed", with(func(n *Node) {
			n.SyncStatus, n.Operation, n.LastSyncError = string(v1alpha1.SyncFailed), "op-1", "no --reboot-command"
		}),
			[]string{"node n1: operation op-1 failed: no --reboot-command"}},
		{"drain given up", with(func(n *Node) { n.DrainProblem = "given up: too long" }), []string{"node n1: drain given up: too long"}},
		{"one line per node", with(func(n *Node) {
			n.SyncStatus, n.Operation, n.LiveChange, n.DrainProblem = string(v1alpha1.SyncFailed), "op-1", "FAILED: PodMTU: x", "given up: y"
		}), []string{"node n1: change: FAILED: PodMTU: x"}},
		{"zones invalid", Report{Zones: &v1alpha1.ZonesStatus{Phase: v1alpha1.ReasonInvalidConfig, Message: "zone-mode: \"x\""}},
			[]string{"zones: invalid configuration: zone-mode: \"x\""}},
		{"zone move held", Report{Zones: &v1alpha1.ZonesStatus{Phase: "Holding", Held: []v1alpha1.ZoneHold{{Node: "n2", Reason: "CrashLoopBackOff"}}}},
			[]string{"node n2: zone move held: CrashLoopBackOff"}},
		{"zones moving", Report{Zones: &v1alpha1.ZonesStatus{Phase: "MovingNodes", Moving: []string{"n2"}}}, nil},
	} {
		if got := c.r.Faults(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDegraded(t *testing.T) {
	failed := &v1alpha1.NetworkChange{ID: "mtu-1", Phase: v1alpha1.PhaseFailed, Message: "node n1 failed PodMTU"}
	cond := func(s metav1.ConditionStatus, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.NetshiftNetworkDegraded, Status: s, Reason: v1alpha1.ReasonChangeFailed, Message: msg}}
	}
	for _, c := range []struct {
		name string
		st   v1alpha1.NetshiftNetworkStatus
		want string
	}{
		{"the operator says degraded", v1alpha1.NetshiftNetworkStatus{Change: failed, Conditions: cond(metav1.ConditionTrue, "mtu-1 failed")}, "mtu-1 failed"},
		{"the operator says not (reverted)", v1alpha1.NetshiftNetworkStatus{Change: failed, Conditions: cond(metav1.ConditionFalse, "")}, ""},
		{"no condition yet, failed", v1alpha1.NetshiftNetworkStatus{Change: failed}, "mtu-1 Failed: node n1 failed PodMTU"},
		{"no condition yet, rolled back", v1alpha1.NetshiftNetworkStatus{Change: &v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseRolledBack}}, "c RolledBack"},
		{"no condition yet, succeeded", v1alpha1.NetshiftNetworkStatus{Change: &v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseSucceeded}}, ""},
	} {
		if got := degraded(c.st); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDrainProblem(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	started := metav1.NewTime(now.Add(-11 * time.Minute))
	state := func(op string, s v1alpha1.NetshiftNodeStateStatus) *v1alpha1.NetshiftNodeState {
		st := &v1alpha1.NetshiftNodeState{Status: s}
		if op != "" {
			st.Spec.Operation = &v1alpha1.NodeOperation{ID: op}
		}
		return st
	}
	gaveUp := &v1alpha1.DrainFailure{Operation: "op-1", Reason: "drain of node n1 has taken 11m0s"}
	for _, c := range []struct {
		name   string
		st     *v1alpha1.NetshiftNodeState
		policy rollout.DrainPolicy
		want   string
	}{
		{"idle", state("", v1alpha1.NetshiftNodeStateStatus{}), rollout.DefaultDrainPolicy, ""},
		{"given up", state("op-1", v1alpha1.NetshiftNodeStateStatus{DrainFailure: gaveUp}), rollout.DefaultDrainPolicy, "given up: drain of node n1 has taken 11m0s"},
		{"an older operation's", state("op-2", v1alpha1.NetshiftNodeStateStatus{DrainFailure: gaveUp}), rollout.DefaultDrainPolicy, ""},
		{"over its timeout", state("op-2", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainStartedAt: &started}), rollout.DefaultDrainPolicy,
			"draining for over its timeout of 10m0s (onTimeout: Wait)"},
		{"within a longer timeout", state("op-2", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainStartedAt: &started}),
			rollout.DrainPolicy{Timeout: time.Hour}, ""},
		{"drained, past the timeout", state("op-2", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainStartedAt: &started}), rollout.DefaultDrainPolicy, ""},
	} {
		if got := drainProblem(c.st, c.policy, now); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
