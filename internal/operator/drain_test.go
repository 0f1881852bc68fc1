package operator_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
)

var exampleOwners = map[string]string{"a": "pool1", "b": "pool1", "c": "pool1", "d": "pool2", "e": "pool2"}

// exampleCluster is the example: nodes a..e, pool1 = {a,b,c}
// priority 1 maxParallel 1, pool2 = {c,d,e} priority 99 maxParallel 2, two
// pods on every node.
func exampleCluster(t *testing.T) *cluster {
	cl := newCluster(t)
	cl.startOperator()
	nodes := []string{"a", "b", "c", "d", "e"}
	cl.createNodes(nodes...)
	cl.createPool("pool1", 1, intstr.FromInt32(1), "a", "b", "c")
	cl.createPool("pool2", 99, intstr.FromInt32(2), "c", "d", "e")
	for _, n := range nodes {
		cl.createPods(n, 2, map[string]string{"app": "web"})
	}
	cl.startAgents(nodes...)
	return cl
}

// TestExampleCDEStartAtOnce: a change to c, d and e drains all three at once:
// c is pool1's (lower number wins) where nothing else drains, and pool2
// allows 2. Every node is drained (pods evicted), then uncordoned.
func TestExampleCDEStartAtOnce(t *testing.T) {
	cl := exampleCluster(t)
	sw := cl.watchSlots(exampleOwners)
	cl.startOperation("op-cde", "c", "d", "e")

	cl.eventually(30*time.Second, "c, d and e drained at the same time", func() bool {
		for _, n := range []string{"c", "d", "e"} {
			if cl.state(n).DrainStatus != v1alpha1.DrainingComplete {
				return false
			}
		}
		return true
	})
	for _, n := range []string{"c", "d", "e"} {
		if !cl.node(n).Spec.Unschedulable {
			t.Errorf("node %s is drained but not cordoned", n)
		}
		if s := cl.state(n); !s.CordonedByNetshift || s.Pool != exampleOwners[n] {
			t.Errorf("node %s: cordonedByNetshift=%v pool=%q, want true and %s", n, s.CordonedByNetshift, s.Pool, exampleOwners[n])
		}
	}
	cl.eventually(10*time.Second, "pool statuses", func() bool {
		var p1, p2 v1alpha1.NetshiftNodePool
		_ = cl.c.Get(cl.ctx, client.ObjectKey{Name: "pool1"}, &p1)
		_ = cl.c.Get(cl.ctx, client.ObjectKey{Name: "pool2"}, &p2)
		return reflect.DeepEqual(p1.Status.Nodes, []string{"a", "b", "c"}) && p1.Status.Draining == 1 && p1.Status.Limit == 1 &&
			reflect.DeepEqual(p2.Status.Nodes, []string{"d", "e"}) && p2.Status.Draining == 2 && p2.Status.NodeCount == 2
	})
	var pods corev1.PodList
	if err := cl.c.List(cl.ctx, &pods); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if slices.Contains([]string{"c", "d", "e"}, p.Spec.NodeName) {
			t.Errorf("pod %s/%s still on drained node %s", p.Namespace, p.Name, p.Spec.NodeName)
		}
	}
	cl.gate.openAll()
	cl.waitFinished("op-cde", "c", "d", "e")
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if cl.node(n).Spec.Unschedulable {
			t.Errorf("node %s left cordoned", n)
		}
	}
	if got, want := sw.peaks(), map[string]int{"pool1": 1, "pool2": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("peak nodes holding a slot per pool = %v, want %v", got, want)
	}
	if s := cl.state("a"); s.DrainStatus != v1alpha1.DrainIdle && s.DrainStatus != "" {
		t.Errorf("node a was not part of the change but is %s", s.DrainStatus)
	}
}

// TestControllerFollowsPlanWaves: with all five nodes asking at once and each
// wave finishing together, the controller grants slots in exactly the waves
// `netshift plan` computes with the same core: [a d e], [b], [c].
func TestControllerFollowsPlanWaves(t *testing.T) {
	cl := exampleCluster(t)
	sw := cl.watchSlots(exampleOwners)
	want := cl.planWaves("a", "b", "c", "d", "e")
	if !reflect.DeepEqual(want, [][]string{{"a", "d", "e"}, {"b"}, {"c"}}) {
		t.Fatalf("plan waves = %v, want the example's [[a d e] [b] [c]]", want)
	}
	cl.startOperation("op-all", "a", "b", "c", "d", "e")
	var got [][]string
	seen := 0
	for i := range want {
		var wave []string
		cl.eventually(30*time.Second, "the next wave to be granted and drained", func() bool {
			// Agents under load may ask a little apart: a node whose request came after the
			// settle window joins its wave a pass later, so the wave is whole at its planned size.
			adm := sw.admissions()
			if len(adm)-seen < len(want[i]) {
				return false
			}
			wave = slices.Clone(adm[seen:])
			for _, n := range wave {
				if cl.state(n).DrainStatus != v1alpha1.DrainingComplete {
					return false
				}
			}
			return true
		})
		// Nothing else may start while this wave holds every slot it can: two whole passes
		// decide on it (while later waves wait, passes repeat on their own).
		if i < len(want)-1 {
			cl.waitPasses(2)
		}
		if adm := sw.admissions(); len(adm) != seen+len(wave) {
			t.Fatalf("admissions %v: more nodes started while wave %v held its slots", adm, wave)
		}
		slices.Sort(wave)
		got = append(got, wave)
		seen += len(wave)
		cl.gate.release(wave...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("controller's waves = %v, want the plan's %v", got, want)
	}
	cl.waitFinished("op-all", "a", "b", "c", "d", "e")
}
