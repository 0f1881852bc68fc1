package livechange

import (
	"testing"
	"time"

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

func TestClockSpread(t *testing.T) {
	for nodes, want := range map[int]time.Duration{0: 0, 3: 12 * time.Millisecond, 1000: 4 * time.Second, 5000: 20 * time.Second, 100000: time.Minute} {
		if got := ClockSpread(nodes); got != want {
			t.Errorf("%d nodes: %s, want %s", nodes, got, want)
		}
	}
}
