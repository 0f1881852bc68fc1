package zones

import (
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func pluginPod(uid string, created time.Time, mods ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ovn", Name: "node-" + uid, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }

func crashLooping(p *corev1.Pod) {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", RestartCount: 4,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "start\nno SB"}}}}
}

func TestNextPluginStep(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	timeout := time.Minute
	rec := &Restart{Zone: "n1", PodUID: "a", At: t0}
	cases := []struct {
		name    string
		pods    []corev1.Pod
		rec     *Restart
		now     time.Time
		record  bool
		del     string // UID of the pod to delete
		held    []string
		recheck time.Duration
	}{
		{name: "first step: record and delete the running pod", pods: []corev1.Pod{pluginPod("a", t0, ready)}, now: t0, record: true, del: "a"},
		{name: "no pod on the node: record the restart, nothing to delete", now: t0, record: true},
		{name: "a move netshift did not start, its pod still starting: left to read the label", pods: []corev1.Pod{pluginPod("a", t0)},
			now: t0.Add(10 * time.Second), recheck: 50 * time.Second},
		{name: "a move netshift did not start, its pod crash-looping: held, not deleted", pods: []corev1.Pod{pluginPod("a", t0, crashLooping)},
			now: t0.Add(10 * time.Second), held: []string{"CrashLoopBackOff"}, recheck: 50 * time.Second},
		{name: "label changed since the record: restart again", pods: []corev1.Pod{pluginPod("b", t0, ready)},
			rec: &Restart{Zone: "global", PodUID: "a", At: t0}, now: t0, record: true, del: "b"},
		{name: "recorded but not deleted (operator stopped in between): delete it", pods: []corev1.Pod{pluginPod("a", t0, ready)}, rec: rec, now: t0, del: "a"},
		{name: "recorded pod terminating, no successor yet: wait", pods: []corev1.Pod{pluginPod("a", t0, deleting)}, rec: rec, now: t0.Add(10 * time.Second),
			recheck: 50 * time.Second},
		{name: "no successor past the timeout: held", rec: rec, now: t0.Add(2 * time.Minute), held: []string{"no network plugin pod on the node 2m0s"}},
		{name: "successor starting: wait", pods: []corev1.Pod{pluginPod("b", t0.Add(time.Second))}, rec: rec, now: t0.Add(5 * time.Second), recheck: 55 * time.Second},
		{name: "successor crash-looping: held at once", pods: []corev1.Pod{pluginPod("b", t0.Add(time.Second), crashLooping)}, rec: rec, now: t0.Add(5 * time.Second),
			held: []string{"plugin pod ovn/node-b", "container node CrashLoopBackOff", "restarted 4 times", "last exit 2 (Error): no SB"}, recheck: 55 * time.Second},
		{name: "successor not ready past the timeout: held", pods: []corev1.Pod{pluginPod("b", t0.Add(time.Second))}, rec: rec, now: t0.Add(time.Minute),
			held: []string{"plugin pod ovn/node-b is not ready 1m0s after the restart (phase Running)"}},
		{name: "successor ready but no annotation past the timeout: held", pods: []corev1.Pod{pluginPod("b", t0.Add(time.Second), ready)}, rec: rec,
			now: t0.Add(3 * time.Minute), held: []string{"is ready but has not annotated the node k8s.ovn.org/zone-name=n1 3m0s after the restart"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step := NextPluginStep("n1", c.pods, c.rec, c.now, timeout)
			if step.Record != c.record {
				t.Errorf("record %v, want %v", step.Record, c.record)
			}
			switch {
			case c.del == "" && step.Delete != nil:
				t.Errorf("deletes %s, want nothing", step.Delete.UID)
			case c.del != "" && (step.Delete == nil || string(step.Delete.UID) != c.del):
				t.Errorf("deletes %v, want %s", step.Delete, c.del)
			}
			if len(c.held) == 0 && step.Held != "" {
				t.Errorf("held %q, want not held", step.Held)
			}
			for _, want := range c.held {
				if !strings.Contains(step.Held, want) {
					t.Errorf("held %q, want it to say %q", step.Held, want)
				}
			}
			if step.Recheck != c.recheck {
				t.Errorf("recheck %s, want %s", step.Recheck, c.recheck)
			}
		})
	}
}

func TestCentralOf(t *testing.T) {
	dep := func(gen, observed int64, replicas *int32, status, ready, updated int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: replicas},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: status, ReadyReplicas: ready, UpdatedReplicas: updated}}
	}
	for _, c := range []struct {
		name string
		d    *appsv1.Deployment
		want Central
	}{
		{"scaled up and ready", dep(2, 2, ptr.To[int32](1), 1, 1, 1), CentralRunning},
		{"replicas unset means 1", dep(1, 1, nil, 1, 1, 1), CentralRunning},
		{"scaled up, not observed yet", dep(3, 2, ptr.To[int32](1), 0, 0, 0), CentralStarting},
		{"scaled up, pod not ready", dep(2, 2, ptr.To[int32](1), 1, 0, 1), CentralStarting},
		{"scaled to 0, pod still terminating", dep(4, 4, ptr.To[int32](0), 1, 0, 0), CentralRetiring},
		{"scaled to 0, not observed yet", dep(5, 4, ptr.To[int32](0), 0, 0, 0), CentralRetiring},
		{"scaled to 0 and gone", dep(5, 5, ptr.To[int32](0), 0, 0, 0), CentralRetired},
		{"scaled to 0, its pod retiring the zone", func() *appsv1.Deployment {
			d := dep(5, 5, ptr.To[int32](0), 0, 0, 0)
			d.Status.TerminatingReplicas = ptr.To[int32](1)
			return d
		}(), CentralRetiring},
	} {
		if got := CentralOf(c.d); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestFollowZone(t *testing.T) {
	marks := []string{RemoteZoneMigrated}
	for _, c := range []struct {
		name    string
		before  map[string]string
		zone    string
		after   map[string]string
		changed bool
	}{
		{"into the central zone: the mark goes", map[string]string{RemoteZoneMigrated: "n1", "other": "x"}, GlobalZone, map[string]string{"other": "x"}, true},
		{"into the central zone, unmarked: nothing to do", map[string]string{"other": "x"}, GlobalZone, map[string]string{"other": "x"}, false},
		{"out of it: marked with the new zone", map[string]string{"other": "x"}, "n1", map[string]string{"other": "x", RemoteZoneMigrated: "n1"}, true},
		{"out of it, already marked by the plugin: kept as it is", map[string]string{RemoteZoneMigrated: "n1"}, "n1", map[string]string{RemoteZoneMigrated: "n1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := maps.Clone(c.before)
			if changed := FollowZone(got, marks, c.zone); changed != c.changed || !maps.Equal(got, c.after) {
				t.Fatalf("FollowZone(%v, %s) = %v, %v; want %v, %v", c.before, c.zone, changed, got, c.changed, c.after)
			}
		})
	}
	none := map[string]string{"other": "x"}
	if FollowZone(none, nil, "n1") || len(none) != 1 {
		t.Fatalf("a plugin with no marks: %v", none)
	}
}
