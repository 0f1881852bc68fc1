package livechange

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"netshift.io/netshift/api/v1alpha1"
)

func TestPolicyFromSpec(t *testing.T) {
	for _, c := range []struct {
		name  string
		spec  v1alpha1.FailurePolicy
		nodes int
		want  Policy
	}{
		{"defaults: roll back, stop at the first failure", v1alpha1.FailurePolicy{}, 100, Policy{Action: v1alpha1.FailureRollback}},
		{"a count", v1alpha1.FailurePolicy{Action: v1alpha1.FailureReboot, MaxFailedNodes: ptr.To(intstr.FromInt32(3))}, 100, Policy{Action: v1alpha1.FailureReboot, MaxFailed: 3}},
		{"a percentage rounds down", v1alpha1.FailurePolicy{MaxFailedNodes: ptr.To(intstr.FromString("10%"))}, 19, Policy{Action: v1alpha1.FailureRollback, MaxFailed: 1}},
		{"10% of 9 nodes allows none", v1alpha1.FailurePolicy{MaxFailedNodes: ptr.To(intstr.FromString("10%"))}, 9, Policy{Action: v1alpha1.FailureRollback}},
		{"a malformed value allows none", v1alpha1.FailurePolicy{MaxFailedNodes: ptr.To(intstr.FromString("ten"))}, 9, Policy{Action: v1alpha1.FailureRollback}},
		{"control plane opt-in", v1alpha1.FailurePolicy{Action: v1alpha1.FailureNone, RebootControlPlane: true}, 3, Policy{Action: v1alpha1.FailureNone, RebootControlPlane: true}},
	} {
		if got := PolicyFromSpec(c.spec, c.nodes); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestRollbackPlan: a rollback runs the change's steps the other way round,
// each putting back the old value, and writes the old configuration last.
func TestRollbackPlan(t *testing.T) {
	t0 := metav1.NewMicroTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	old := v1alpha1.NodeNetworkConfig{MTU: 1450, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}
	down := &v1alpha1.LiveChangePlan{ID: "mtu-3-1", Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, Encapsulation: v1alpha1.EncapVXLAN,
		Steps: Schedule(Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}, ovsSteps, 100*time.Millisecond)}
	down.ReportSpreadMs = 30000 // a change of 5,000 nodes
	back := RollbackPlan(down, t0, 100*time.Millisecond, old, ReportSpread(10, DefaultAgentWriteSpacing))
	if back.ID != "mtu-3-1-rollback" || !back.Rollback || back.From != 1350 || back.To != 1450 || !back.T0.Equal(&t0) || *back.Network != old {
		t.Fatalf("rollback plan = %+v", back)
	}
	if back.ReportSpreadMs != 60 {
		t.Errorf("the rollback of 10 nodes spreads its reports over %d ms, want the 60 ms of 10 nodes", back.ReportSpreadMs)
	}
	// Lowering went pods first; putting the larger MTU back widens the path first.
	if got := actions(back.Steps); !reflect.DeepEqual(got, []string{"NodePortMTU", "HostVethMTU", "PodMTU", "NetworkConfig"}) {
		t.Fatalf("rollback of a decrease runs %v", got)
	}
	for _, s := range back.Steps {
		if s.Value != 1450 {
			t.Fatalf("every step puts back 1450: %+v", back.Steps)
		}
	}
	portChange := Change{Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790, NodeSteps: true}
	port := RollbackPlan(&v1alpha1.LiveChangePlan{ID: "vxlanport-4-1", Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790,
		Steps: Schedule(portChange, ovsSteps, time.Second)}, t0, time.Second, old, 0)
	if got := actions(port.Steps); !reflect.DeepEqual(got, []string{"TunnelPort", "NetworkConfig"}) || port.Steps[0].Value != 4789 {
		t.Fatalf("rollback of a port change = %+v", port.Steps)
	}
	// A Geneve port set in OVN's southbound database has no node step: its rollback has none either.
	southbound := Change{Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082}
	sb := RollbackPlan(&v1alpha1.LiveChangePlan{ID: "geneveport-5-1", Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082,
		Steps: Schedule(southbound, ovsSteps, time.Second)}, t0, time.Second, old, 0)
	if got := actions(sb.Steps); !reflect.DeepEqual(got, []string{"NetworkConfig"}) {
		t.Fatalf("rollback of a southbound port change = %+v", sb.Steps)
	}
}

func TestEvaluateRollback(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	back := &v1alpha1.LiveChangeReport{ID: "c-rollback", Ready: true, Done: true}
	stuck := &v1alpha1.LiveChangeReport{ID: "c-rollback", Ready: true, Done: true, Failed: true,
		Steps: []v1alpha1.StepResult{{Action: "NodePortMTU", Error: "ovsdb: timeout"}}}
	running := &v1alpha1.LiveChangeReport{ID: "c-rollback", Ready: true}
	all := &v1alpha1.ChangeRollback{All: true, Reason: "steps failed: node b: PodMTU: boom"}
	some := &v1alpha1.ChangeRollback{Reason: "steps failed: node b: PodMTU: boom"}
	rollback, reboot := Policy{Action: v1alpha1.FailureRollback}, Policy{Action: v1alpha1.FailureReboot}
	cp := map[string]bool{"a": true}
	for _, c := range []struct {
		name                 string
		rb                   *v1alpha1.ChangeRollback
		reports              map[string]*v1alpha1.LiveChangeReport
		deadline             time.Time
		policy               Policy
		controlPlane         map[string]bool
		phase                v1alpha1.ChangePhase
		reboot, held, silent []string
		msg                  string
	}{
		{"waiting", all, map[string]*v1alpha1.LiveChangeReport{"a": back, "b": running}, now.Add(time.Minute), rollback, nil,
			v1alpha1.PhaseRollingBack, nil, nil, nil, "waiting for b"},
		{"every node back: the change stopped", all, map[string]*v1alpha1.LiveChangeReport{"a": back, "b": back}, time.Time{}, reboot, nil,
			v1alpha1.PhaseRolledBack, nil, nil, nil, "every node was rolled back live"},
		{"a failed rollback is rebooted", all, map[string]*v1alpha1.LiveChangeReport{"a": back, "b": stuck}, time.Time{}, reboot, nil,
			v1alpha1.PhaseFailed, []string{"b"}, nil, nil, "node b: NodePortMTU: ovsdb: timeout"},
		{"a failed rollback is held under Rollback", all, map[string]*v1alpha1.LiveChangeReport{"a": back, "b": stuck}, time.Time{}, rollback, nil,
			v1alpha1.PhaseFailed, nil, []string{"b"}, nil, "reboots nothing"},
		{"a control-plane node is never rebooted unless opted in", all, map[string]*v1alpha1.LiveChangeReport{"a": stuck, "b": stuck}, time.Time{}, reboot, cp,
			v1alpha1.PhaseFailed, []string{"b"}, []string{"a"}, nil, "rebootControlPlane"},
		{"opted in", all, map[string]*v1alpha1.LiveChangeReport{"a": stuck, "b": back}, time.Time{}, Policy{Action: v1alpha1.FailureReboot, RebootControlPlane: true}, cp,
			v1alpha1.PhaseFailed, []string{"a"}, nil, nil, ""},
		{"a node rolled back alone is off the cluster's value: rebooted into it", some, map[string]*v1alpha1.LiveChangeReport{"b": back}, time.Time{}, reboot, nil,
			v1alpha1.PhaseFailed, []string{"b"}, nil, nil, "off the cluster's new one: b"},
		{"or held", some, map[string]*v1alpha1.LiveChangeReport{"b": back}, time.Time{}, rollback, nil,
			v1alpha1.PhaseFailed, nil, []string{"b"}, nil, "netshift reconfigure --reboot"},
		{"silent past the deadline: not rolled back until it reports", all, map[string]*v1alpha1.LiveChangeReport{"a": back, "b": nil}, now.Add(-time.Second), rollback, nil,
			v1alpha1.PhaseFailed, nil, nil, []string{"b"}, "no rollback report from b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := EvaluateRollback(c.rb, c.reports, now, c.deadline, c.policy, c.controlPlane)
			if o.Phase != c.phase || !strings.Contains(o.Message, c.msg) {
				t.Fatalf("phase %s, message %q; want %s and %q", o.Phase, o.Message, c.phase, c.msg)
			}
			if !reflect.DeepEqual(o.Reboot, c.reboot) || !reflect.DeepEqual(o.Held, c.held) || !reflect.DeepEqual(o.Silent, c.silent) {
				t.Fatalf("reboot %v, held %v, silent %v; want %v, %v, %v", o.Reboot, o.Held, o.Silent, c.reboot, c.held, c.silent)
			}
		})
	}
}

func TestCaughtUp(t *testing.T) {
	forward := &v1alpha1.NetworkChange{ID: "c"}
	stopped := &v1alpha1.NetworkChange{ID: "c", Rollback: &v1alpha1.ChangeRollback{All: true}}
	alone := &v1alpha1.NetworkChange{ID: "c", Rollback: &v1alpha1.ChangeRollback{Nodes: []string{"m"}}}
	state := func(rep string, done, failed bool) *v1alpha1.NetshiftNodeState {
		nns := &v1alpha1.NetshiftNodeState{}
		nns.Name = "n"
		if rep != "" {
			nns.Status.LiveChange = &v1alpha1.LiveChangeReport{ID: rep, Done: done, Failed: failed,
				Steps: []v1alpha1.StepResult{{Action: "PodMTU", Error: map[bool]string{true: "boom"}[failed]}}}
		}
		return nns
	}
	for _, c := range []struct {
		name               string
		ch                 *v1alpha1.NetworkChange
		nns                *v1alpha1.NetshiftNodeState
		wantDone, wantFail bool
	}{
		{"ran its steps late", forward, state("c", true, false), true, false},
		{"still silent", forward, state("", false, false), false, false},
		{"preconditions answered, steps not run", forward, state("c", false, false), false, false},
		{"ran them late and failed", forward, state("c", true, true), true, true},
		{"a report of another change", forward, state("d", true, false), false, false},
		{"every node rolled back: its rollback counts", stopped, state("c-rollback", true, false), true, false},
		{"every node rolled back: a late report of the change does not", stopped, state("c", true, false), false, false},
		{"its rollback failed late", stopped, state("c-rollback", true, true), true, true},
		{"another node rolled back alone: its own steps count", alone, state("c", true, false), true, false},
	} {
		done, failed, how := CaughtUp(c.nns, c.ch)
		if done != c.wantDone || failed != c.wantFail {
			t.Errorf("%s: done %v, failed %v (%s); want %v, %v", c.name, done, failed, how, c.wantDone, c.wantFail)
		}
	}
}

func TestRebooted(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	ch := &v1alpha1.NetworkChange{ID: "c", StartedAt: &started}
	after, before := metav1.NewTime(started.Add(time.Minute)), metav1.NewTime(started.Add(-time.Minute))
	rebooted := func(kind v1alpha1.OperationKind, at metav1.Time, st v1alpha1.SyncStatus) *v1alpha1.NetshiftNodeState {
		nns := &v1alpha1.NetshiftNodeState{}
		nns.Spec.Operation = &v1alpha1.NodeOperation{ID: "op", Kind: kind, RequestedAt: &at}
		nns.Status.SyncOperation, nns.Status.SyncStatus = "op", st
		return nns
	}
	for _, c := range []struct {
		name string
		nns  *v1alpha1.NetshiftNodeState
		want bool
	}{
		{"rebooted and checked", rebooted(v1alpha1.OperationReboot, after, v1alpha1.SyncSucceeded), true},
		{"its reboot failed", rebooted(v1alpha1.OperationReboot, after, v1alpha1.SyncFailed), false},
		{"still rebooting", rebooted(v1alpha1.OperationReboot, after, v1alpha1.SyncInProgress), false},
		{"a reboot from before the change", rebooted(v1alpha1.OperationReboot, before, v1alpha1.SyncSucceeded), false},
		{"a reconfigure is no reboot", rebooted(v1alpha1.OperationReconfigure, after, v1alpha1.SyncSucceeded), false},
		{"no operation", &v1alpha1.NetshiftNodeState{}, false},
	} {
		if got, how := Rebooted(c.nns, ch); got != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, got, how, c.want)
		}
	}
}

func TestOff(t *testing.T) {
	for _, c := range []struct {
		policy       Policy
		controlPlane bool
		reboot       bool
	}{
		{Policy{Action: v1alpha1.FailureRollback}, false, false},
		{Policy{Action: v1alpha1.FailureNone}, false, false},
		{Policy{Action: v1alpha1.FailureReboot}, false, true},
		{Policy{Action: v1alpha1.FailureReboot}, true, false},
		{Policy{Action: v1alpha1.FailureReboot, RebootControlPlane: true}, true, true},
		{Policy{Action: v1alpha1.FailureRollback, RebootControlPlane: true}, true, false},
	} {
		if got := Off(c.policy, c.controlPlane); got != c.reboot {
			t.Errorf("%+v, control plane %v: reboot %v, want %v", c.policy, c.controlPlane, got, c.reboot)
		}
	}
}

func TestRebootFailed(t *testing.T) {
	ch := &v1alpha1.NetworkChange{ID: "c"}
	state := func(op string, sync string, st v1alpha1.SyncStatus) *v1alpha1.NetshiftNodeState {
		nns := &v1alpha1.NetshiftNodeState{}
		if op != "" {
			nns.Spec.Operation = &v1alpha1.NodeOperation{ID: op, Kind: v1alpha1.OperationReboot}
		}
		nns.Status.SyncOperation, nns.Status.SyncStatus, nns.Status.LastSyncError = sync, st, "reboot command: exit 1"
		return nns
	}
	for _, c := range []struct {
		name string
		nns  *v1alpha1.NetshiftNodeState
		want bool
	}{
		{"failed", state("c-reboot", "c-reboot", v1alpha1.SyncFailed), true},
		{"still at work", state("c-reboot", "c-reboot", v1alpha1.SyncInProgress), false},
		{"done", state("c-reboot", "c-reboot", v1alpha1.SyncSucceeded), false},
		{"another operation failed", state("reconfigure-1", "reconfigure-1", v1alpha1.SyncFailed), false},
		{"not started", state("", "", ""), false},
	} {
		if got, why := RebootFailed(c.nns, ch); got != c.want || (got && why != "reboot command: exit 1") {
			t.Errorf("%s: %v (%q), want %v", c.name, got, why, c.want)
		}
	}
}
