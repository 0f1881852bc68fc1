package livechange

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"netshift.io/netshift/api/v1alpha1"
)

func TestDryRunStartsOncePerEditAndNeverBeforeAChange(t *testing.T) {
	applied := v1alpha1.AppliedNetwork{MTU: 1450, VXLANPort: 4789, GenevePort: 6081}
	spec := func(mtu int32, d *v1alpha1.DryRunRequest) v1alpha1.NetshiftNetworkSpec {
		return v1alpha1.NetshiftNetworkSpec{MTU: ptr.To(mtu), Encapsulation: v1alpha1.EncapVXLAN, DryRun: d}
	}
	doneAt := func(gen int64) *v1alpha1.NetworkChange {
		return &v1alpha1.NetworkChange{DryRun: true, Generation: gen, Phase: v1alpha1.PhaseChecked}
	}
	for _, c := range []struct {
		name  string
		spec  v1alpha1.NetshiftNetworkSpec
		last  *v1alpha1.NetworkChange
		want  Change
		start bool
	}{
		{"none asked", spec(1450, nil), nil, Change{}, false},
		{"mtu", spec(1450, &v1alpha1.DryRunRequest{MTU: ptr.To[int32](1350)}), nil, Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}, true},
		{"vxlan port", spec(1450, &v1alpha1.DryRunRequest{VXLANPort: ptr.To[int32](4790)}), nil,
			Change{Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790, NodeSteps: true}, true},
		{"geneve port on vxlan: recorded only", spec(1450, &v1alpha1.DryRunRequest{GenevePort: ptr.To[int32](6082)}), nil,
			Change{Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082}, true},
		{"the value in force", spec(1450, &v1alpha1.DryRunRequest{MTU: ptr.To[int32](1450)}), nil, Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1450}, true},
		{"done for this edit", spec(1450, &v1alpha1.DryRunRequest{MTU: ptr.To[int32](1350)}), doneAt(7), Change{}, false},
		{"done for an earlier edit", spec(1450, &v1alpha1.DryRunRequest{MTU: ptr.To[int32](1350)}), doneAt(6),
			Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}, true},
		{"the spec asks for a change", spec(1400, &v1alpha1.DryRunRequest{MTU: ptr.To[int32](1350)}), nil, Change{}, false},
	} {
		got, start := DryRun(c.spec, 7, applied, c.last)
		if got != c.want || start != c.start {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, start, c.want, c.start)
		}
	}
}

func TestDryRunReportsEveryNode(t *testing.T) {
	now := time.Unix(1000, 0)
	ready := &v1alpha1.LiveChangeReport{Ready: true}
	bad := &v1alpha1.LiveChangeReport{Problems: []string{"MTU 9000 does not fit the underlay"}}
	for _, c := range []struct {
		name     string
		reports  map[string]*v1alpha1.LiveChangeReport
		deadline time.Time
		phase    v1alpha1.ChangePhase
		failed   int32
		says     []string
	}{
		{"all ready", map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": ready}, now.Add(time.Minute), v1alpha1.PhaseChecked, 0, []string{"every node passed"}},
		{"a problem waits for the others", map[string]*v1alpha1.LiveChangeReport{"a": bad, "b": nil}, now.Add(time.Minute), v1alpha1.PhasePreconditions, 1, []string{"waiting for b"}},
		{"a problem, all answered", map[string]*v1alpha1.LiveChangeReport{"a": bad, "b": ready}, now.Add(time.Minute), v1alpha1.PhaseChecked, 1,
			[]string{"1 of 2 nodes would stop the change", "node a: MTU 9000", "nothing was changed"}},
		{"silent past the deadline", map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": nil}, now.Add(-time.Second), v1alpha1.PhaseChecked, 1, []string{"node b: no answer"}},
	} {
		p := EvaluateDryRun(c.reports, now, Deadlines{Preconditions: c.deadline})
		if p.Phase != c.phase || p.Failed != c.failed {
			t.Errorf("%s: phase %s failed %d, want %s %d (%s)", c.name, p.Phase, p.Failed, c.phase, c.failed, p.Message)
		}
		for _, s := range c.says {
			if !strings.Contains(p.Message, s) {
				t.Errorf("%s: %q does not say %q", c.name, p.Message, s)
			}
		}
	}
}
