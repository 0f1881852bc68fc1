package livechange

import (
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

func TestPlanFor(t *testing.T) {
	cluster := &v1alpha1.LiveChangePlan{ID: "mtu-2-1"}
	rollback := &v1alpha1.LiveChangePlan{ID: "mtu-2-1-rollback", Rollback: true}
	for _, c := range []struct {
		name         string
		own, cluster *v1alpha1.LiveChangePlan
		want         *v1alpha1.LiveChangePlan
	}{
		{"no change in progress", nil, nil, nil},
		{"the cluster's change", nil, cluster, cluster},
		{"a node rolled back runs its rollback", rollback, cluster, rollback},
		{"a node left behind runs its own once the cluster's is gone", cluster, nil, cluster},
	} {
		if got := PlanFor(c.own, c.cluster); got != c.want {
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
