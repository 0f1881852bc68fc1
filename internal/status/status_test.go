package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/zones"
)

func TestLiveChangeProgress(t *testing.T) {
	t0 := metav1.NewMicroTime(metav1.Now().Time)
	steps := []v1alpha1.ScheduledStep{{Action: netplugin.StepPodMTU}, {Action: netplugin.StepHostVethMTU}, {Action: v1alpha1.StepNetworkConfig}}
	scheduled := &v1alpha1.LiveChangePlan{ID: "c", T0: &t0, Steps: steps}
	checking := &v1alpha1.LiveChangePlan{ID: "c"}
	active := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseScheduled}}
	checkingAll := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhasePreconditions,
		Steps: []v1alpha1.StepAction{netplugin.StepPodMTU, netplugin.StepHostVethMTU, v1alpha1.StepNetworkConfig}}}
	scheduledAll := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseScheduled, T0: &t0, Steps: checkingAll.Steps}}
	ended := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseFailed, Converging: []string{"n"}}}
	one := []v1alpha1.StepResult{{Action: netplugin.StepPodMTU}}
	failed := []v1alpha1.StepResult{{Action: netplugin.StepPodMTU, Error: "no such device"}}
	rollingBack := &v1alpha1.LiveChangePlan{ID: "c-rollback", Rollback: true, T0: scheduled.T0, Steps: scheduled.Steps}
	for _, tc := range []struct {
		name string
		plan *v1alpha1.LiveChangePlan
		rep  *v1alpha1.LiveChangeReport
		ch   *Change
		want string
	}{
		{"no change", nil, nil, nil, ""},
		{"no answer yet", checking, nil, active, "checking"},
		{"an older change's report", checking, &v1alpha1.LiveChangeReport{ID: "b", Ready: true}, active, "checking"},
		{"blocked", checking, &v1alpha1.LiveChangeReport{ID: "c", Problems: []string{"UDP port 4790 is in use"}}, active, "BLOCKED: UDP port 4790 is in use"},
		{"ready, no T0", checking, &v1alpha1.LiveChangeReport{ID: "c", Ready: true}, active, "ready"},
		{"one step of three", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Steps: one}, active, "1/3 steps"},
		{"done", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true}, active, "done"},
		{"a step failed", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true, Failed: true, Steps: failed}, active, "FAILED: PodMTU: no such device"},
		{"held after its step failed", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true, Failed: true, Steps: failed}, ended, "FAILED: PodMTU: no such device"},
		{"the cluster's plan, no T0 yet", nil, &v1alpha1.LiveChangeReport{ID: "c", Ready: true}, checkingAll, "ready"},
		{"the cluster's plan, one step of three", nil, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Steps: one}, scheduledAll, "1/3 steps"},
		{"rolling back", rollingBack, &v1alpha1.LiveChangeReport{ID: "c-rollback", Ready: true, Steps: one}, active, "rollback 1/3 steps"},
		{"rolled back", rollingBack, &v1alpha1.LiveChangeReport{ID: "c-rollback", Ready: true, Done: true}, active, "rollback done"},
		{"its rollback failed", rollingBack, &v1alpha1.LiveChangeReport{ID: "c-rollback", Ready: true, Done: true, Failed: true, Steps: failed}, active, "rollback FAILED: PodMTU: no such device"},
		{"outside", nil, nil, &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseScheduled, Outside: []string{"n"}}}, "outside: no agent runs there"},
		{"down", scheduled, nil, &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseSucceeded, Down: []string{"n"}}}, "down: catches up when it is back"},
		{"catching up", &v1alpha1.LiveChangePlan{ID: "catchup-mtu-1350", Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, T0: &t0, Steps: steps},
			&v1alpha1.LiveChangeReport{ID: "catchup-mtu-1350", Ready: true, Steps: one},
			&Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseSucceeded, Down: []string{"n"}}}, "back, catching up (MTU 1450 -> 1350): 1/3 steps"},
		{"another node of an ended change", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Done: true}, &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseFailed, Converging: []string{"m"}}}, ""},
	} {
		nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		nns.Spec.LiveChange, nns.Status.LiveChange = tc.plan, tc.rep
		if got := liveChangeProgress(nns, tc.ch); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNodeZone(t *testing.T) {
	node := func(annotation, label string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{}, Labels: map[string]string{}}}
		if annotation != "" {
			n.Annotations[zones.ZoneAnnotation] = annotation
		}
		if label != "" {
			n.Labels[zones.ZoneLabel] = label
		}
		return n
	}
	held := &v1alpha1.ZonesStatus{Held: []v1alpha1.ZoneHold{{Node: "n1", Reason: "plugin pod ovn/x: container ovnkube CrashLoopBackOff"}}}
	for _, c := range []struct {
		name string
		n    corev1.Node
		z    *v1alpha1.ZonesStatus
		want string
	}{
		{"no zones", node("", ""), nil, ""},
		{"in its zone", node("global", "global"), nil, "global"},
		{"annotated, no label", node("global", ""), nil, "global"},
		{"moving", node("global", "n1"), &v1alpha1.ZonesStatus{}, "global -> n1"},
		{"moving from the legacy layout", node("", "global"), nil, "- -> global"},
		{"held", node("global", "n1"), held, "global -> n1 (held: plugin pod ovn/x: container ovnkube CrashLoopBackOff)"},
	} {
		if got := nodeZone(c.n, c.z); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRebootProgress(t *testing.T) {
	ch := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseFailed, Rebooting: []string{"n"}}}
	state := func(op string, st v1alpha1.NetshiftNodeStateStatus) *v1alpha1.NetshiftNodeState {
		nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: st}
		if op != "" {
			nns.Spec.Operation = &v1alpha1.NodeOperation{ID: op, Kind: v1alpha1.OperationReboot}
		}
		return nns
	}
	for _, tc := range []struct {
		name string
		nns  *v1alpha1.NetshiftNodeState
		want string
	}{
		{"another operation still at work", state("reconfigure-1", v1alpha1.NetshiftNodeStateStatus{}), "reboot: waiting to start"},
		{"waiting for its pool's slot", state("c-reboot", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired}), "reboot: Drain_Required"},
		{"draining", state("c-reboot", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "c-reboot", SyncOperation: "c-reboot"}), "reboot: Draining"},
		{"rebooting", state("c-reboot", v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "c-reboot", SyncOperation: "c-reboot", RebootFromBoot: "b1"}), "rebooting"},
		{"done", state("c-reboot", v1alpha1.NetshiftNodeStateStatus{SyncOperation: "c-reboot", SyncStatus: v1alpha1.SyncSucceeded}), "rebooted and checked"},
		{"failed", state("c-reboot", v1alpha1.NetshiftNodeStateStatus{SyncOperation: "c-reboot", SyncStatus: v1alpha1.SyncFailed, LastSyncError: "no --reboot-command"}), "reboot FAILED: no --reboot-command"},
	} {
		if got := liveChangeProgress(tc.nns, ch); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	held := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseFailed, Held: []string{"n"}}}
	failed := state("c-reboot", v1alpha1.NetshiftNodeStateStatus{SyncOperation: "c-reboot", SyncStatus: v1alpha1.SyncFailed, LastSyncError: "exit 1"})
	if got := liveChangeProgress(failed, held); got != "held for a person: reboot FAILED: exit 1" {
		t.Errorf("held after its reboot failed: %q", got)
	}
	if got := liveChangeProgress(state("", v1alpha1.NetshiftNodeStateStatus{}), held); !strings.HasPrefix(got, "held for a person: reboot it") {
		t.Errorf("held: %q", got)
	}
	person := state("reboot-1", v1alpha1.NetshiftNodeStateStatus{SyncOperation: "reboot-1", DrainStatus: v1alpha1.Draining, DrainOperation: "reboot-1"})
	if got := liveChangeProgress(person, held); got != "held for a person; reboot: Draining" {
		t.Errorf("held, a person's reboot draining: %q", got)
	}
}
