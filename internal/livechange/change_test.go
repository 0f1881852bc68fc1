package livechange

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

func TestNext(t *testing.T) {
	applied := v1alpha1.AppliedNetwork{MTU: 1450, VXLANPort: 4789, GenevePort: 6081}
	w := Wanted{MTU: 1450, VXLANPort: 4789, GenevePort: 6081, UnderlayMTU: 1500, Encapsulation: v1alpha1.EncapVXLAN}
	if _, ok := Next(w, applied); ok {
		t.Fatal("no change asked, one found")
	}
	w.MTU = 1350
	if c, ok := Next(w, applied); !ok || c.Kind != v1alpha1.ChangeMTU || c.From != 1450 || c.To != 1350 || !c.NodeSteps {
		t.Fatalf("MTU change = %+v", c)
	}
	w.MTU = 1450
	w.GenevePort = 6082
	if c, ok := Next(w, applied); !ok || c.Kind != v1alpha1.ChangeGenevePort || c.NodeSteps {
		t.Fatalf("a Geneve port change on a VXLAN cluster is recorded without node steps: %+v", c)
	}
	if got := (Change{Kind: v1alpha1.ChangeGenevePort, To: 6082}).Apply(applied); got.GenevePort != 6082 || got.MTU != 1450 {
		t.Fatalf("Apply = %+v", got)
	}
}

func actions(steps []v1alpha1.ScheduledStep) []string {
	var out []string
	for _, s := range steps {
		out = append(out, string(s.Action))
	}
	return out
}

// ovsSteps are the steps of a plugin whose pods hang off an OVS bridge (the lab's).
var ovsSteps = NodeSteps{Path: []v1alpha1.StepAction{"PodMTU", "HostVethMTU", "NodePortMTU"}, Tunnel: []v1alpha1.StepAction{"TunnelPort"}}

// TestScheduleKeepsADriversOrder: whatever steps a driver names, lowering
// runs its path as given, raising runs it reversed, a port change runs its
// tunnel steps in order, each a spacing apart, and the configuration is last.
func TestScheduleKeepsADriversOrder(t *testing.T) {
	kernel := NodeSteps{Path: []v1alpha1.StepAction{"PodMTU", "HostVethMTU", "BridgeMTU", "VXLANDeviceMTU"},
		Tunnel: []v1alpha1.StepAction{"VXLANDevice", "FDB"}}
	for _, tc := range []struct {
		c    Change
		want []string
	}{
		{Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1400, NodeSteps: true}, []string{"PodMTU", "HostVethMTU", "BridgeMTU", "VXLANDeviceMTU", "NetworkConfig"}},
		{Change{Kind: v1alpha1.ChangeMTU, From: 1400, To: 1450, NodeSteps: true}, []string{"VXLANDeviceMTU", "BridgeMTU", "HostVethMTU", "PodMTU", "NetworkConfig"}},
		{Change{Kind: v1alpha1.ChangeVXLANPort, From: 8472, To: 4789, NodeSteps: true}, []string{"VXLANDevice", "FDB", "NetworkConfig"}},
		{Change{Kind: v1alpha1.ChangeVXLANPort, From: 8472, To: 4789, NodeSteps: false}, []string{"NetworkConfig"}},
		{Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1400, NodeSteps: true}, nil}, // checked below with no path at all
	} {
		steps := kernel
		if tc.want == nil {
			steps, tc.want = NodeSteps{}, []string{"NetworkConfig"}
		}
		got := Schedule(tc.c, steps, 50*time.Millisecond)
		if !reflect.DeepEqual(actions(got), tc.want) {
			t.Fatalf("%+v: steps %v, want %v", tc.c, actions(got), tc.want)
		}
		for i, s := range got {
			if s.OffsetMs != int32(50*i) || s.Value != tc.c.To {
				t.Fatalf("%+v: step %d is %+v, want offset %d ms and value %d", tc.c, i, s, 50*i, tc.c.To)
			}
		}
	}
	if kernel.Path[0] != "PodMTU" {
		t.Fatal("Schedule reordered the driver's own list")
	}
}

func TestScheduleOrder(t *testing.T) {
	down := Schedule(Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}, ovsSteps, 100*time.Millisecond)
	if got := actions(down); !reflect.DeepEqual(got, []string{"PodMTU", "HostVethMTU", "NodePortMTU", "NetworkConfig"}) {
		t.Fatalf("decrease order = %v: pods first, the path after", got)
	}
	if down[0].OffsetMs != 0 || down[1].OffsetMs != 100 || down[2].OffsetMs != 200 || down[2].Value != 1350 || down[3].OffsetMs != 300 {
		t.Fatalf("offsets = %+v", down)
	}
	up := Schedule(Change{Kind: v1alpha1.ChangeMTU, From: 1350, To: 1450, NodeSteps: true}, ovsSteps, 100*time.Millisecond)
	if got := actions(up); !reflect.DeepEqual(got, []string{"NodePortMTU", "HostVethMTU", "PodMTU", "NetworkConfig"}) {
		t.Fatalf("increase order = %v: the path first, pods last", got)
	}
	port := Schedule(Change{Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790, NodeSteps: true}, ovsSteps, time.Second)
	if got := actions(port); !reflect.DeepEqual(got, []string{"TunnelPort", "NetworkConfig"}) || port[0].Value != 4790 || port[1].OffsetMs != 1000 {
		t.Fatalf("port schedule = %+v", port)
	}
	southbound := Schedule(Change{Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, NodeSteps: false}, ovsSteps, time.Second)
	if got := actions(southbound); !reflect.DeepEqual(got, []string{"NetworkConfig"}) || southbound[0].OffsetMs != 0 || southbound[0].Value != 6082 {
		t.Fatalf("a change without node steps only writes the configuration: %+v", southbound)
	}
	for _, s := range down[:3] {
		if s.Value != 1350 {
			t.Fatalf("every MTU step carries the new MTU: %+v", down)
		}
	}
}

// TestCordonsSilentNodes: a node left behind silent is cordoned for an MTU
// change, either way, and for no port change, with node steps or through the
// southbound database.
func TestCordonsSilentNodes(t *testing.T) {
	for _, c := range []struct {
		change Change
		want   bool
	}{
		{Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1350, NodeSteps: true}, true},
		{Change{Kind: v1alpha1.ChangeMTU, From: 1350, To: 1450, NodeSteps: true}, true},
		{Change{Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790, NodeSteps: true}, false},
		{Change{Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, NodeSteps: true}, false},
		{Change{Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, NodeSteps: false}, false},
		{Change{Kind: v1alpha1.ChangeVXLANPort, From: 4789, To: 4790, NodeSteps: false}, false},
	} {
		if got := c.change.CordonsSilentNodes(); got != c.want {
			t.Errorf("%s %d -> %d (node steps %v): cordons %v, want %v", c.change.Kind, c.change.From, c.change.To, c.change.NodeSteps, got, c.want)
		}
	}
}

func TestNodeConfig(t *testing.T) {
	applied := v1alpha1.AppliedNetwork{MTU: 1400, VXLANPort: 4790, GenevePort: 6082}
	if got := NodeConfig(applied, v1alpha1.EncapVXLAN); got != (v1alpha1.NodeNetworkConfig{MTU: 1400, Encapsulation: "vxlan", TunnelPort: 4790}) {
		t.Fatalf("vxlan: %+v", got)
	}
	if got := NodeConfig(applied, v1alpha1.EncapGeneve); got.TunnelPort != 6082 {
		t.Fatalf("geneve: %+v", got)
	}
}

func TestEvaluate(t *testing.T) {
	ready := &v1alpha1.LiveChangeReport{ID: "c", Ready: true}
	done := &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true}
	bad := &v1alpha1.LiveChangeReport{ID: "c", Problems: []string{"port 4790 in use by pid 77 (nc)"}}
	broken := &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true, Failed: true, Steps: []v1alpha1.StepResult{{Action: "PodMTU", Error: "no such device"}}}
	rollback := Policy{Action: v1alpha1.FailureRollback}
	none := Policy{Action: v1alpha1.FailureNone}
	cases := []struct {
		name    string
		phase   v1alpha1.ChangePhase
		reports map[string]*v1alpha1.LiveChangeReport
		policy  Policy
		want    v1alpha1.ChangePhase
		msg     string
		back    []string
		held    []string
	}{
		{"waiting for an agent", v1alpha1.PhasePreconditions, map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": nil}, rollback, v1alpha1.PhasePreconditions, "waiting for b", nil, nil},
		{"all ready", v1alpha1.PhasePreconditions, map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": ready}, rollback, v1alpha1.PhaseScheduled, "", nil, nil},
		{"one problem stops it", v1alpha1.PhasePreconditions, map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": bad}, rollback, v1alpha1.PhaseFailed, "node b: port 4790 in use", nil, nil},
		{"applying", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": done, "b": ready}, rollback, v1alpha1.PhaseScheduled, "waiting for b", nil, nil},
		{"a failure past the limit rolls back at once, the silent node with the others", v1alpha1.PhaseScheduled,
			map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": broken, "c": done}, rollback, v1alpha1.PhaseRollingBack, "stopping it", []string{"a", "b", "c"}, nil},
		{"a late node that failed its preconditions goes with a failure within the limit", v1alpha1.PhaseScheduled,
			map[string]*v1alpha1.LiveChangeReport{"a": done, "b": broken, "c": bad, "d": done}, Policy{Action: v1alpha1.FailureRollback, MaxFailed: 1},
			v1alpha1.PhaseRollingBack, "steps failed on 1 nodes", []string{"b", "c"}, nil},
		{"a failure within the limit waits for every report", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": broken},
			Policy{Action: v1alpha1.FailureRollback, MaxFailed: 1}, v1alpha1.PhaseScheduled, "waiting for a", nil, nil},
		{"a node that joined after T0 and failed its preconditions is held, not counted as applied", v1alpha1.PhaseScheduled,
			map[string]*v1alpha1.LiveChangeReport{"a": done, "b": bad}, rollback, v1alpha1.PhaseFailed, "failed their preconditions after T0 was set", nil, []string{"b"}},
		{"all applied", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": done, "b": done}, rollback, v1alpha1.PhaseSucceeded, "", nil, nil},
		{"one failure past the limit of 0 rolls every node back", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": done, "b": broken}, rollback,
			v1alpha1.PhaseRollingBack, "(spec.onFailure.maxFailedNodes: 0), 1 applied the change: stopping it", []string{"a", "b"}, nil},
		{"within the limit, but no node applied the change", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"b": broken},
			Policy{Action: v1alpha1.FailureRollback, MaxFailed: 1}, v1alpha1.PhaseRollingBack, "0 applied the change", []string{"b"}, nil},
		{"one failure within the limit rolls that node back", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": done, "b": broken},
			Policy{Action: v1alpha1.FailureReboot, MaxFailed: 1}, v1alpha1.PhaseRollingBack, "node b: PodMTU: no such device", []string{"b"}, nil},
		{"every node failed", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": broken, "b": broken}, Policy{Action: v1alpha1.FailureRollback, MaxFailed: 1},
			v1alpha1.PhaseRollingBack, "steps failed on 2 nodes", []string{"a", "b"}, nil},
		{"policy None holds the failed node", v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": done, "b": broken}, none,
			v1alpha1.PhaseFailed, "node b: PodMTU: no such device", nil, []string{"b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Evaluate(c.phase, c.reports, time.Time{}, Deadlines{}, c.policy)
			if p.Phase != c.want || !strings.Contains(p.Message, c.msg) {
				t.Fatalf("Evaluate = %+v, want phase %s and a message with %q", p, c.want, c.msg)
			}
			if !reflect.DeepEqual(p.RollBack, c.back) || !reflect.DeepEqual(p.Held, c.held) {
				t.Fatalf("rolled back %v, held %v; want %v and %v", p.RollBack, p.Held, c.back, c.held)
			}
			if p.RollBackAll != (len(c.back) == len(c.reports) && len(c.back) > 0) {
				t.Fatalf("RollBackAll = %v for rolling back %v of %d nodes", p.RollBackAll, p.RollBack, len(c.reports))
			}
		})
	}
}

func TestEvaluateDeadlines(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := &v1alpha1.LiveChangeReport{ID: "c", Ready: true}
	done := &v1alpha1.LiveChangeReport{ID: "c", Ready: true, Done: true}
	d := Deadlines{Preconditions: t0, Steps: t0.Add(time.Minute)}
	if p := Evaluate(v1alpha1.PhasePreconditions, map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": nil}, t0.Add(-time.Second), d, Policy{}); p.Phase != v1alpha1.PhasePreconditions {
		t.Fatalf("before the deadline: %+v", p)
	}
	p := Evaluate(v1alpha1.PhasePreconditions, map[string]*v1alpha1.LiveChangeReport{"a": ready, "b": nil}, t0.Add(time.Second), d, Policy{})
	if p.Phase != v1alpha1.PhaseFailed || !strings.Contains(p.Message, "no answer from b") || !strings.Contains(p.Message, "nothing was changed") {
		t.Fatalf("a silent node before T0 cancels the change: %+v", p)
	}
	p = Evaluate(v1alpha1.PhaseScheduled, map[string]*v1alpha1.LiveChangeReport{"a": done, "b": ready}, t0.Add(2*time.Minute), d, Policy{})
	if p.Phase != v1alpha1.PhaseFailed || !strings.Contains(p.Message, "no step report from b") || p.Applied != 1 || len(p.Silent) != 1 || p.Silent[0] != "b" {
		t.Fatalf("a silent node after T0 fails the change without holding the others: %+v", p)
	}
}

func TestNextLook(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := time.Second
	for _, c := range []struct {
		name string
		t0   time.Time
		d    Deadlines
		want time.Duration
	}{
		{"nothing due: the heartbeat", time.Time{}, Deadlines{}, 2 * s},
		{"the preconditions' deadline is sooner", time.Time{}, Deadlines{Preconditions: now.Add(500 * time.Millisecond)}, 500 * time.Millisecond},
		{"T0 is sooner than the steps' deadline", now.Add(300 * time.Millisecond), Deadlines{Steps: now.Add(30 * s)}, 300 * time.Millisecond},
		{"past times are not waited for", now.Add(-s), Deadlines{Preconditions: now.Add(-2 * s), Steps: now.Add(s)}, s},
		{"far deadlines: the heartbeat", now.Add(10 * s), Deadlines{Steps: now.Add(40 * s)}, 2 * s},
	} {
		if got := NextLook(now, c.t0, c.d, 2*s); got != c.want {
			t.Errorf("%s: next look in %s, want %s", c.name, got, c.want)
		}
	}
}

func TestNextAttempt(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later, earlier := metav1.NewTime(now.Add(time.Minute)), metav1.NewTime(now.Add(-time.Minute))
	mtu := Change{Kind: v1alpha1.ChangeMTU, From: 1450, To: 1400, NodeSteps: true}
	last := func(phase v1alpha1.ChangePhase, to int32, retry *metav1.Time, gen int64) *v1alpha1.NetworkChange {
		return &v1alpha1.NetworkChange{Kind: v1alpha1.ChangeMTU, To: to, Phase: phase, RetryAt: retry, Generation: gen, Attempt: 2}
	}
	for _, c := range []struct {
		name          string
		last          *v1alpha1.NetworkChange
		gen, observed int64
		attempt       int32
		wait          time.Duration
		start         bool
	}{
		{"no change before", nil, 5, 5, 1, 0, true},
		{"the last one succeeded", last(v1alpha1.PhaseSucceeded, 1400, nil, 5), 5, 5, 1, 0, true},
		{"another value failed", last(v1alpha1.PhaseFailed, 1300, nil, 4), 5, 5, 1, 0, true},
		{"preconditions failed: wait for the retry time", last(v1alpha1.PhaseFailed, 1400, &later, 5), 5, 5, 0, time.Minute, false},
		{"preconditions failed: the retry time came", last(v1alpha1.PhaseFailed, 1400, &earlier, 5), 5, 5, 3, 0, true},
		{"failed in its steps: waits for an edit", last(v1alpha1.PhaseFailed, 1400, nil, 5), 5, 5, 0, 0, false},
		{"rolled back: waits for an edit", last(v1alpha1.PhaseRolledBack, 1400, nil, 5), 5, 5, 0, 0, false},
		{"rolled back, the spec edited since", last(v1alpha1.PhaseRolledBack, 1400, nil, 5), 7, 7, 1, 0, true},
		{"aborted: waits for an edit", last(v1alpha1.PhaseAborted, 1400, nil, 5), 5, 5, 0, 0, false},
		{"an older operator's record: the observed generation stands in", last(v1alpha1.PhaseFailed, 1400, nil, 0), 6, 6, 0, 0, false},
		{"an older operator's record, edited since", last(v1alpha1.PhaseFailed, 1400, nil, 0), 7, 6, 1, 0, true},
	} {
		attempt, wait, start := NextAttempt(c.last, mtu, c.gen, c.observed, now)
		if start != c.start || (start && attempt != c.attempt) || wait != c.wait {
			t.Errorf("%s: attempt %d, wait %s, start %v; want %d, %s, %v", c.name, attempt, wait, start, c.attempt, c.wait, c.start)
		}
	}
}

func TestListedNamesAtMostTenAndCountsTheRest(t *testing.T) {
	var nodes []string
	for i := range 12 {
		nodes = append(nodes, fmt.Sprintf("n%d", i))
	}
	if got := listed(nodes[:3], ", "); got != "n0, n1, n2" {
		t.Errorf("three nodes: %q", got)
	}
	if got, want := listed(nodes, ", "), "n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, and 2 more"; got != want {
		t.Errorf("twelve nodes: %q, want %q", got, want)
	}
}

func TestPlannedUnderAnotherLeader(t *testing.T) {
	t0 := metav1.NewMicroTime(time.Unix(100, 0))
	plan := func(id, timeURL string, t0 *metav1.MicroTime) *v1alpha1.LiveChangePlan {
		return &v1alpha1.LiveChangePlan{ID: id, TimeURL: timeURL, T0: t0}
	}
	for _, c := range []struct {
		name string
		plan *v1alpha1.LiveChangePlan
		want bool
	}{
		{"no plan yet", nil, false},
		{"this leader's", plan("mtu-2-1", "http://b/time", nil), false},
		{"another's, before T0", plan("mtu-2-1", "http://a/time", nil), true},
		{"another's that advertised none", plan("mtu-2-1", "", nil), true},
		{"another's, T0 set: the steps are this leader's to follow, not to plan again", plan("mtu-2-1", "http://a/time", &t0), false},
		{"another change's", plan("mtu-1-1", "http://a/time", nil), false},
	} {
		if got := PlannedUnderAnotherLeader(c.plan, "mtu-2-1", "http://b/time"); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
