package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
)

func TestChangeSkew(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	step := func(a v1alpha1.StepAction, offset, late time.Duration) v1alpha1.StepResult {
		at := t0.Add(offset)
		return v1alpha1.StepResult{Action: a, At: metav1.NewMicroTime(at.Add(late)), ScheduledAt: &metav1.MicroTime{Time: at},
			LateMicros: late.Microseconds(), WaitedMicros: late.Microseconds() / 2}
	}
	node := func(name, id string, steps ...v1alpha1.StepResult) v1alpha1.NetshiftNodeState {
		st := v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: name}}
		st.Status.LiveChange = &v1alpha1.LiveChangeReport{ID: id, Steps: steps}
		return st
	}
	states := []v1alpha1.NetshiftNodeState{
		node("n1", "c1", step(netplugin.StepTunnelPort, 0, 300*time.Microsecond)),
		node("n2", "c1", step(netplugin.StepTunnelPort, 0, 1200*time.Microsecond)),
		node("n3", "c1", step(netplugin.StepTunnelPort, 0, -100*time.Microsecond)),
		node("n4", "c0", step(netplugin.StepTunnelPort, 0, 90*time.Millisecond)),                             // another change's
		node("n5", "c1", v1alpha1.StepResult{Action: netplugin.StepTunnelPort, At: metav1.NewMicroTime(t0)}), // an older agent's: no schedule
	}
	got := changeSkew(states, "c1")
	want := Skew{Node: "n2", Step: netplugin.StepTunnelPort, LateMicros: 1200, WaitedMicros: 600, SpreadMicros: 1300, Steps: 3}
	if got == nil || *got != want {
		t.Errorf("skew %+v, want %+v", got, want)
	}
	// Two steps: the spread is the widest of either, never across steps.
	states = []v1alpha1.NetshiftNodeState{
		node("n1", "c2", step(netplugin.StepPodMTU, 0, 0), step(netplugin.StepHostVethMTU, 500*time.Millisecond, 2*time.Millisecond)),
		node("n2", "c2", step(netplugin.StepPodMTU, 0, 500*time.Microsecond), step(netplugin.StepHostVethMTU, 500*time.Millisecond, 0)),
	}
	got = changeSkew(states, "c2")
	want = Skew{Node: "n1", Step: netplugin.StepHostVethMTU, LateMicros: 2000, WaitedMicros: 1000, SpreadMicros: 2000, Steps: 4}
	if got == nil || *got != want {
		t.Errorf("two steps: skew %+v, want %+v", got, want)
	}
	if got := changeSkew(states, "none"); got != nil {
		t.Errorf("no reports: %+v", got)
	}
}
