package livechange

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"netshift.io/netshift/api/v1alpha1"
)

func TestPlanFor(t *testing.T) {
	cluster := &v1alpha1.LiveChangePlan{ID: "mtu-2-1"}
	rollback := &v1alpha1.LiveChangePlan{ID: "mtu-2-1-rollback", Rollback: true}
	answered := &v1alpha1.LiveChangeReport{ID: "mtu-2-1", Ready: true}
	rolledBack := &v1alpha1.LiveChangeReport{ID: "mtu-2-1-rollback", Ready: true, Done: true}
	earlier := &v1alpha1.LiveChangeReport{ID: "mtu-1-1-rollback", Done: true}
	for _, c := range []struct {
		name         string
		own, cluster *v1alpha1.LiveChangePlan
		rep          *v1alpha1.LiveChangeReport
		want         *v1alpha1.LiveChangePlan
	}{
		{"no change in progress", nil, nil, nil, nil},
		{"the cluster's change", nil, cluster, nil, cluster},
		{"the cluster's change, answered", nil, cluster, answered, cluster},
		{"the cluster's change, an earlier change's rollback reported", nil, cluster, earlier, cluster},
		{"a node rolled back runs its rollback", rollback, cluster, answered, rollback},
		{"a node rolled back, its rollback removed before the cluster's plan", nil, cluster, rolledBack, nil},
		{"a node left behind runs its own once the cluster's is gone", cluster, nil, answered, cluster},
	} {
		if got := PlanFor(c.own, c.cluster, c.rep); got != c.want {
			t.Errorf("%s: plan %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestOwnPlanOutdated(t *testing.T) {
	for _, c := range []struct {
		own  *v1alpha1.LiveChangePlan
		want bool
	}{
		{nil, false},
		{&v1alpha1.LiveChangePlan{ID: "mtu-2-1"}, false},
		{&v1alpha1.LiveChangePlan{ID: "mtu-2-1-rollback"}, false},
		{&v1alpha1.LiveChangePlan{ID: "mtu-1-1"}, true},
		{&v1alpha1.LiveChangePlan{ID: "mtu-2-2"}, true},
		{&v1alpha1.LiveChangePlan{ID: "mtu-1-1-rollback"}, true},
	} {
		if got := OwnPlanOutdated(c.own, "mtu-2-1"); got != c.want {
			t.Errorf("own plan %+v during mtu-2-1: outdated %v, want %v", c.own, got, c.want)
		}
	}
}

func TestAnswered(t *testing.T) {
	reports := map[string]*v1alpha1.LiveChangeReport{
		"silent":  nil,
		"ready":   {ID: "c", Ready: true},
		"blocked": {ID: "c", Problems: []string{"UDP port in use"}},
		"done":    {ID: "c", Ready: true, Done: true},
	}
	for phase, want := range map[v1alpha1.ChangePhase]int{
		v1alpha1.PhasePreconditions: 3, v1alpha1.PhaseScheduled: 1, v1alpha1.PhaseRollingBack: 1,
	} {
		if got := Answered(phase, reports); got != want {
			t.Errorf("%s: %d answered, want %d", phase, got, want)
		}
	}
}

func TestAgentsSpread(t *testing.T) {
	for _, c := range []struct {
		nodes   int
		perNode time.Duration
		want    time.Duration
	}{
		{0, DefaultAgentWriteSpacing, 0},
		{3, DefaultAgentWriteSpacing, 18 * time.Millisecond},
		{1000, DefaultAgentWriteSpacing, 6 * time.Second},
		{5000, DefaultAgentWriteSpacing, 30 * time.Second},
		{10000, DefaultAgentWriteSpacing, time.Minute},
		{100000, DefaultAgentWriteSpacing, time.Minute},
		{5000, time.Millisecond, 5 * time.Second}, // a control plane that serves 1,000 writes a second
		{5000, 100 * time.Millisecond, time.Minute},
	} {
		if got := ClockSpread(c.nodes, c.perNode); got != c.want {
			t.Errorf("%d nodes %s apart: clock checks over %s, want %s", c.nodes, c.perNode, got, c.want)
		}
		if got := ReportSpread(c.nodes, c.perNode); got != c.want {
			t.Errorf("%d nodes %s apart: reports over %s, want %s", c.nodes, c.perNode, got, c.want)
		}
	}
}

func TestLead(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var ds []time.Duration
		for _, v := range vs {
			ds = append(ds, time.Duration(v)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]time.Duration, 0, 100)
	for i := range 100 {
		hundred = append(hundred, time.Duration(i+1)*10*time.Millisecond) // 10 ms to 1 s
	}
	spike := append(ms(make([]int, 199)...), 20*time.Second) // one agent in 200 restarted mid-delivery
	fast := func(n int) []time.Duration { return ms(make([]int, n)...) }
	for _, c := range []struct {
		name    string
		floor   time.Duration
		nodes   int
		reached []time.Duration
		want    time.Duration
	}{
		{"nothing measured, a small cluster: the floor and 1 ms a node", 2 * time.Second, 3, nil, 2003 * time.Millisecond},
		{"nothing measured, 5,000 nodes", 2 * time.Second, 5000, nil, 7 * time.Second},
		{"fast agents: the floor", 2 * time.Second, 3, ms(20, 35, 50), 2 * time.Second},
		{"slow agents: twice the slowest of three", 2 * time.Second, 3, ms(400, 1500, 900), 3 * time.Second},
		{"twice the 99th percentile of 100", time.Second, 100, hundred, 1980 * time.Millisecond},
		{"one late agent in 200 is not the lead", 500 * time.Millisecond, 200, spike, 500 * time.Millisecond},
		{"a slow watch is capped", 2 * time.Second, 2, ms(40000, 100), MaxLead},
		{"a floor above the cap is the floor", time.Minute, 2, ms(40000, 100), time.Minute},
		{"too few measured: no less than before anything was", 2 * time.Second, 5000, ms(100, 100, 100), 7 * time.Second},
		{"too few measured, and slower than that", 2 * time.Second, 5000, ms(4000, 100), 8 * time.Second},
		{"half measured is enough", 2 * time.Second, 5000, fast(2500), 2 * time.Second},
		{"one short of half is not", 2 * time.Second, 5000, fast(2499), 7 * time.Second},
	} {
		if got := Lead(c.floor, c.nodes, c.reached); got != c.want {
			t.Errorf("%s: lead %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPlanReached(t *testing.T) {
	written := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := metav1.NewMicroTime(written)
	micros := func(d time.Duration) *int64 { v := d.Microseconds(); return &v }
	for _, c := range []struct {
		name      string
		writtenAt *metav1.MicroTime
		seen      time.Time
		started   time.Time
		offset    *int64
		want      *int32
	}{
		{"the same clock", &at, written.Add(1234 * time.Millisecond), written.Add(-time.Hour), micros(0), ptr.To[int32](1234)},
		{"the node's clock 3 s ahead", &at, written.Add(3*time.Second + 250*time.Millisecond), written.Add(-time.Hour), micros(3 * time.Second), ptr.To[int32](250)},
		{"the node's clock 2 s behind", &at, written.Add(-2*time.Second + 80*time.Millisecond), written.Add(-time.Hour), micros(-2 * time.Second), ptr.To[int32](80)},
		{"seen before written, within the clock's bound: zero", &at, written.Add(-time.Millisecond), written.Add(-time.Hour), micros(0), ptr.To[int32](0)},
		{"the clock not measured", &at, written.Add(time.Second), written.Add(-time.Hour), nil, nil},
		{"a plan with no time (an older operator)", nil, written.Add(time.Second), written.Add(-time.Hour), micros(0), nil},
		{"the agent started after the plan was written", &at, written.Add(20 * time.Second), written.Add(15 * time.Second), micros(0), nil},
		{"started before it by the operator's clock, though after by the node's", &at, written.Add(5500 * time.Millisecond), written.Add(4 * time.Second), micros(5 * time.Second), ptr.To[int32](500)},
	} {
		got := PlanReached(c.writtenAt, c.seen, c.started, c.offset)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: %v, want %v", c.name, deref(got), deref(c.want))
		}
	}
}

func deref(p *int32) any {
	if p == nil {
		return "none"
	}
	return *p
}

func TestConfirmWindowAndAbortDeadline(t *testing.T) {
	for _, c := range []struct {
		nodes            int
		spacing          time.Duration
		window, deadline time.Duration
	}{
		{3, 6 * time.Millisecond, 400 * time.Millisecond, 900 * time.Millisecond},
		{5000, 6 * time.Millisecond, 3 * time.Second, 3500 * time.Millisecond},
		{10000, 2 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond},
	} {
		w := ConfirmWindow(c.nodes, c.spacing)
		if w != c.window || AbortDeadline(w) != c.deadline {
			t.Errorf("%d nodes at %s: window %s, abort until %s before T0; want %s and %s", c.nodes, c.spacing, w, AbortDeadline(w), c.window, c.deadline)
		}
	}
	if AbortDeadline(0) != 900*time.Millisecond {
		t.Errorf("a plan with no window (an older operator's): abort until %s before T0, want 900ms", AbortDeadline(0))
	}
}
