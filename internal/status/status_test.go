package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/zones"
)

func TestLiveChangeProgress(t *testing.T) {
	t0 := metav1.NewMicroTime(metav1.Now().Time)
	steps := []v1alpha1.ScheduledStep{{Action: v1alpha1.StepPodMTU}, {Action: v1alpha1.StepHostVethMTU}, {Action: v1alpha1.StepNetworkConfig}}
	scheduled := &v1alpha1.LiveChangePlan{ID: "c", T0: &t0, Steps: steps}
	checking := &v1alpha1.LiveChangePlan{ID: "c"}
	active := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseScheduled}}
	ended := &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseFailed, Converging: []string{"n"}}}
	one := []v1alpha1.StepResult{{Action: v1alpha1.StepPodMTU}}
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
		{"restoring", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Failed: true, Restore: "Running on boot x"}, active, "a step FAILED; restore: Running on boot x"},
		{"restore failed, still converging", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true, Failed: true, Restore: "Failed: no"}, ended, "FAILED, restore: Failed: no"},
		{"restored", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true, Failed: true, Restore: "Done"}, ended, "restored after a failed step"},
		{"another node of an ended change", scheduled, &v1alpha1.LiveChangeReport{ID: "c", Done: true}, &Change{NetworkChange: v1alpha1.NetworkChange{ID: "c", Phase: v1alpha1.PhaseFailed, Converging: []string{"m"}}}, ""},
	} {
		nns := &v1alpha1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
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
