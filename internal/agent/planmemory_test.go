package agent

import (
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

func TestAStateOlderThanTheAgentsOwnReportIsStale(t *testing.T) {
	var m planMemory
	now := time.Now()
	if m.stale("mtu-1", nil, now) {
		t.Error("nothing reported yet, and the state counts as stale")
	}
	m.answer("mtu-1")
	if !m.stale("mtu-1", nil, now) || !m.stale("mtu-1", &v1alpha1.LiveChangeReport{ID: "mtu-0"}, now) {
		t.Error("the agent answered, and a state without its answer is not stale")
	}
	answered := &v1alpha1.LiveChangeReport{ID: "mtu-1", Ready: true}
	if m.stale("mtu-1", answered, now) {
		t.Error("a state with the answer counts as stale")
	}
	pod := v1alpha1.StepResult{Action: "PodMTU"}
	m.ran("mtu-1", []v1alpha1.StepResult{pod}, false)
	if !m.stale("mtu-1", answered, now) {
		t.Error("a step reported, and a state without it is not stale")
	}
	withPod := &v1alpha1.LiveChangeReport{ID: "mtu-1", Ready: true, Steps: []v1alpha1.StepResult{pod}}
	if m.stale("mtu-1", withPod, now) {
		t.Error("a state with every step reported counts as stale")
	}
	m.ran("mtu-1", nil, true)
	if !m.stale("mtu-1", withPod, now) {
		t.Error("the node's part reported done, and a state not done is not stale")
	}
	withPod.Done = true
	if m.stale("mtu-1", withPod, now) || m.stale("mtu-2", nil, now) {
		t.Error("a current state, or another plan's, counts as stale")
	}
}

func TestAStateLongerStaleThanACacheLagsIsTrusted(t *testing.T) {
	var m planMemory
	m.answer("mtu-1")
	start := time.Now()
	if !m.stale("mtu-1", nil, start) || !m.stale("mtu-1", nil, start.Add(staleFor-time.Second)) {
		t.Fatal("a state without the agent's answer is not stale at first")
	}
	// The state was made again (its reports gone): the agent answers again rather than wait forever.
	if m.stale("mtu-1", nil, start.Add(staleFor)) {
		t.Error("still stale after staleFor")
	}
	if m.stale("mtu-1", nil, start.Add(staleFor+time.Second)) {
		t.Error("the forgotten plan came back as stale")
	}
}

// TestAPlanIsSeenOnce: a plan checked again (its answer's write failed) keeps
// the moment the agent first took it up, and a plan taken up after a check
// that its arrival withdrew has no such moment: it waited for that check.
func TestAPlanIsSeenOnce(t *testing.T) {
	var m planMemory
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if got := m.firstSeen("mtu-2-1", t0); !got.Equal(t0) {
		t.Fatalf("first sight of mtu-2-1 at %v, want %v", got, t0)
	}
	if got := m.firstSeen("mtu-2-1", t0.Add(20*time.Second)); !got.Equal(t0) {
		t.Errorf("mtu-2-1 checked again: seen at %v, want the first sight %v", got, t0)
	}
	m.withdrawnDuringCheck()
	if got := m.firstSeen("mtu-2-2", t0.Add(25*time.Second)); !got.IsZero() {
		t.Errorf("mtu-2-2, taken up once mtu-2-1's check noticed it withdrawn: seen at %v, want no measure", got)
	}
	if got := m.firstSeen("mtu-3-1", t0.Add(time.Minute)); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("mtu-3-1 after a check that ended normally: seen at %v, want %v", got, t0.Add(time.Minute))
	}
	m.withdrawnDuringCheck() // an abort: no plan follows
	m.noPlan()
	if got := m.firstSeen("mtu-4-1", t0.Add(time.Hour)); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("mtu-4-1, long after an aborted check: seen at %v, want %v", got, t0.Add(time.Hour))
	}
	m.withdrawnDuringCheck()
	m.firstSeen("mtu-4-1", t0.Add(time.Hour+time.Second)) // taken up again after its check was withdrawn
	if got := m.firstSeen("mtu-5-1", t0.Add(2*time.Hour)); !got.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("mtu-5-1: seen at %v, want %v: the withdrawal was the plan taken up again's, not this one's", got, t0.Add(2*time.Hour))
	}
}
