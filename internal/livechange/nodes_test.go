package livechange

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

func TestWhoTakesPart(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	nodes := []NodeFacts{
		{Name: "win-1", RunsAgent: false, Ready: true},
		{Name: "node-3", RunsAgent: true, Ready: false, Since: now.Add(-2 * time.Minute)},  // down past the grace
		{Name: "node-2", RunsAgent: true, Ready: false, Since: now.Add(-10 * time.Second)}, // blinking: waited for
		{Name: "node-1", RunsAgent: true, Ready: true, Since: now.Add(-time.Hour)},         // in
		{Name: "node-4", RunsAgent: true, Ready: true, Since: now.Add(-time.Second)},       // back, still behind
		{Name: "win-2", RunsAgent: false, Ready: false, Since: now.Add(-time.Hour)},        // outside, down or not
		{Name: "node-5", RunsAgent: true, Ready: false, Since: now.Add(-time.Minute)},      // exactly at the grace
		{Name: "node-6", RunsAgent: true, Ready: false, Since: now.Add(-59 * time.Second)}, // just inside it
		{Name: "node-7", RunsAgent: true, Ready: false, Since: now.Add(-10 * time.Minute)}, // down and behind: down once
		{Name: "node-8", RunsAgent: true, Ready: true, Since: now.Add(-10 * time.Minute)},  // ready, not behind
		{Name: "node-9", RunsAgent: false, Ready: true, Since: now.Add(-10 * time.Minute)}, // behind, yet no agent: outside
	}
	got := WhoTakesPart(nodes, now, time.Minute, []string{"node-4", "node-7", "node-9"})
	want := Taking{
		In:      []string{"node-1", "node-2", "node-6", "node-8"},
		Outside: []string{"node-9", "win-1", "win-2"},
		Down:    []string{"node-3", "node-4", "node-5", "node-7"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WhoTakesPart = %+v\nwant %+v", got, want)
	}
	if got := WhoTakesPart(nodes[:1], now, 0, nil); len(got.In) != 0 || len(got.Outside) != 1 {
		t.Fatalf("a grace of 0 still leaves a node with no agent outside: %+v", got)
	}
	if got := WhoTakesPart([]NodeFacts{{Name: "n", RunsAgent: true, Ready: false, Since: now}}, now, 0, nil); len(got.Down) != 1 {
		t.Fatalf("a grace of 0: a NotReady node is down at once: %+v", got)
	}
}

func TestUnion(t *testing.T) {
	if got := Union([]string{"c", "a"}, []string{"b", "a"}); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("Behind = %v", got)
	}
	if got := Union(nil, nil); len(got) != 0 {
		t.Fatalf("Behind of nothing = %v", got)
	}
}

func TestCatchUpNeeded(t *testing.T) {
	applied := v1alpha1.AppliedNetwork{MTU: 1350, VXLANPort: 4790, GenevePort: 6081}
	cases := []struct {
		name     string
		observed *v1alpha1.ObservedNetwork
		encap    v1alpha1.Encapsulation
		want     Change
		off      bool
	}{
		{"no report yet", nil, v1alpha1.EncapVXLAN, Change{}, false},
		{"in step", &v1alpha1.ObservedNetwork{MTU: 1350, TunnelPort: 4790}, v1alpha1.EncapVXLAN, Change{}, false},
		{"MTU first", &v1alpha1.ObservedNetwork{MTU: 1450, TunnelPort: 4789}, v1alpha1.EncapVXLAN,
			Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}, true},
		{"then the port", &v1alpha1.ObservedNetwork{MTU: 1350, TunnelPort: 4789}, v1alpha1.EncapVXLAN,
			Change{Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790, NodeSteps: true}, true},
		{"Geneve's port", &v1alpha1.ObservedNetwork{MTU: 1350, TunnelPort: 6090}, v1alpha1.EncapGeneve,
			Change{Kind: v1alpha1.ChangeGenevePort, From: 6090, To: 6081, NodeSteps: true}, true},
		{"unknown values are in step", &v1alpha1.ObservedNetwork{}, v1alpha1.EncapVXLAN, Change{}, false},
	}
	for _, c := range cases {
		got, off := CatchUpNeeded(c.observed, applied, c.encap)
		if got != c.want || off != c.off {
			t.Errorf("%s: CatchUpNeeded = %+v, %v; want %+v, %v", c.name, got, off, c.want, c.off)
		}
	}
}

func TestCatchUpPlan(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	c := Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}
	steps := NodeSteps{Path: []v1alpha1.StepAction{"PodMTU", "HostVethMTU"}}
	applied := v1alpha1.AppliedNetwork{MTU: 1350, VXLANPort: 4790}
	p := CatchUpPlan(c, steps, 100*time.Millisecond, t0, "lab", applied, v1alpha1.EncapVXLAN, 1500)
	if p.ID != "catchup-mtu-1350" || !IsCatchUp(p.ID) || p.Rollback || !p.T0.Time.Equal(t0) || p.ClockSpreadMs != 0 || p.ReportSpreadMs != 0 {
		t.Fatalf("plan %+v", p)
	}
	if *p.Network != (v1alpha1.NodeNetworkConfig{MTU: 1350, Encapsulation: "vxlan", TunnelPort: 4790}) {
		t.Fatalf("network %+v: want the whole applied network", *p.Network)
	}
	if got := actionsOf(p.Steps); !reflect.DeepEqual(got, []v1alpha1.StepAction{"PodMTU", "HostVethMTU", v1alpha1.StepNetworkConfig}) {
		t.Fatalf("steps %v: a decrease runs from the pods outward, the configuration last", got)
	}
	if IsCatchUp("mtu-3-1") || IsCatchUp(CatchUpPrefix) {
		t.Fatal("IsCatchUp takes another change's ID for a catch-up")
	}
}

func actionsOf(steps []v1alpha1.ScheduledStep) []v1alpha1.StepAction {
	var out []v1alpha1.StepAction
	for _, s := range steps {
		out = append(out, s.Action)
	}
	return out
}

func TestDecideCatchUps(t *testing.T) {
	applied := v1alpha1.AppliedNetwork{MTU: 1350, VXLANPort: 4789}
	at := func(mtu int32) *v1alpha1.ObservedNetwork {
		return &v1alpha1.ObservedNetwork{MTU: mtu, TunnelPort: 4789}
	}
	plan := &v1alpha1.LiveChangePlan{ID: "catchup-mtu-1350"}
	other := &v1alpha1.LiveChangePlan{ID: "mtu-4-1"}
	nodes := []CatchingUp{
		{Name: "still-down", Back: false, Observed: at(1450)},
		{Name: "back-in-step", Back: true, Observed: at(1350)},
		{Name: "back-off", Back: true, Observed: at(1450)},
		{Name: "back-off-with-an-old-plan", Back: true, Observed: at(1450), Plan: other},
		{Name: "running", Back: true, Observed: at(1450), Plan: plan, Report: &v1alpha1.LiveChangeReport{ID: plan.ID, Ready: true}},
		{Name: "not-answered", Back: true, Observed: at(1450), Plan: plan},
		{Name: "done", Back: true, Observed: at(1350), Plan: plan, Report: &v1alpha1.LiveChangeReport{ID: plan.ID, Ready: true, Done: true}},
		{Name: "failed-step", Back: true, Observed: at(1450), Plan: plan,
			Report: &v1alpha1.LiveChangeReport{ID: plan.ID, Ready: true, Done: true, Failed: true, Steps: []v1alpha1.StepResult{{Action: "PodMTU", Error: "boom"}}}},
		{Name: "failed-check", Back: true, Observed: at(1450), Plan: plan, Report: &v1alpha1.LiveChangeReport{ID: plan.ID, Problems: []string{"clock off"}}},
		{Name: "done-yet-off", Back: true, Observed: at(1450), Plan: plan, Report: &v1alpha1.LiveChangeReport{ID: plan.ID, Ready: true, Done: true}},
	}
	d := DecideCatchUps(nodes, applied, v1alpha1.EncapVXLAN)
	if !reflect.DeepEqual(d.InStep, []string{"done"}) {
		t.Errorf("in step %v: only a catch-up's report tells a node is in step", d.InStep)
	}
	want := Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}
	refresh := Change{Kind: v1alpha1.ChangeMTU, From: 1350, To: 1350, NodeSteps: true}
	if len(d.Start) != 3 || d.Start["back-off"] != want || d.Start["back-off-with-an-old-plan"] != want || d.Start["back-in-step"] != refresh {
		t.Errorf("start %+v: a node whose report may predate its fall is refreshed by a catch-up to the applied MTU", d.Start)
	}
	if !reflect.DeepEqual(d.Running, []string{"running", "not-answered"}) {
		t.Errorf("running %v", d.Running)
	}
	if len(d.Failed) != 3 || !strings.Contains(d.Failed["failed-step"], "PodMTU: boom") || !strings.Contains(d.Failed["failed-check"], "clock off") ||
		!strings.Contains(d.Failed["done-yet-off"], "yet the node reports MTU 1450") {
		t.Errorf("failed %v", d.Failed)
	}
}
