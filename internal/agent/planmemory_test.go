package agent

import (
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

func TestAStateOlderThanTheAgentsOwnReportIsStale(t *testing.T) {
	var m planMemory
	if m.stale("mtu-1", nil) {
		t.Error("nothing reported yet, and the state counts as stale")
	}
	m.answer("mtu-1")
	if !m.stale("mtu-1", nil) || !m.stale("mtu-1", &v1alpha1.LiveChangeReport{ID: "mtu-0"}) {
		t.Error("the agent answered, and a state without its answer is not stale")
	}
	answered := &v1alpha1.LiveChangeReport{ID: "mtu-1", Ready: true}
	if m.stale("mtu-1", answered) {
		t.Error("a state with the answer counts as stale")
	}
	pod := v1alpha1.StepResult{Action: "PodMTU"}
	m.ran("mtu-1", []v1alpha1.StepResult{pod}, false)
	if !m.stale("mtu-1", answered) {
		t.Error("a step reported, and a state without it is not stale")
	}
	withPod := &v1alpha1.LiveChangeReport{ID: "mtu-1", Ready: true, Steps: []v1alpha1.StepResult{pod}}
	if m.stale("mtu-1", withPod) {
		t.Error("a state with every step reported counts as stale")
	}
	m.ran("mtu-1", nil, true)
	if !m.stale("mtu-1", withPod) {
		t.Error("the node's part reported done, and a state not done is not stale")
	}
	withPod.Done = true
	if m.stale("mtu-1", withPod) || m.stale("mtu-2", nil) {
		t.Error("a current state, or another plan's, counts as stale")
	}
}
