package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/zones"
)

func TestDrainIgnoresALiveChangesPlansAndReports(t *testing.T) {
	old := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}}
	reported := old.DeepCopy()
	reported.ResourceVersion = "2"
	reported.Spec.LiveChange = &v1alpha1.LiveChangePlan{ID: "mtu-1"}
	reported.Status.LiveChange = &v1alpha1.LiveChangeReport{ID: "mtu-1", Ready: true}
	reported.Status.Network = &v1alpha1.ObservedNetwork{MTU: 1400}
	if stateChangedBeyondALiveChange(old, reported) {
		t.Error("a live change's plan, report and the observed network woke the drain controller")
	}
	held := reported.DeepCopy()
	held.Status.Holds = []v1alpha1.NodeHold{{Kind: v1alpha1.HoldLiveChange, ID: "mtu-1", Cordon: true}}
	if !stateChangedBeyondALiveChange(reported, held) {
		t.Error("a hold taken did not wake the drain controller: it counts against the pools")
	}
	restarting := reported.DeepCopy()
	restarting.Status.ZoneRestart = &v1alpha1.ZoneRestart{Zone: "n1"}
	if !stateChangedBeyondALiveChange(reported, restarting) {
		t.Error("a zone move's plugin restart recorded did not wake the controllers: the move would wait for the next resync")
	}
	asked := old.DeepCopy()
	asked.Spec.Operation = &v1alpha1.NodeOperation{ID: "op", Kind: v1alpha1.OperationReconfigure}
	if !stateChangedBeyondALiveChange(old, asked) {
		t.Error("an operation written did not wake the drain controller")
	}
}

func TestDrainIgnoresHeartbeatsAndPodStatusChurn(t *testing.T) {
	ready := func(s corev1.ConditionStatus, beat int64) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"pool": "a"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s,
				LastHeartbeatTime: metav1.Unix(beat, 0)}}}}
	}
	if drainNodeChanged(ready(corev1.ConditionTrue, 1), ready(corev1.ConditionTrue, 2)) {
		t.Error("a heartbeat woke the drain controller")
	}
	if drainNodeChanged(ready(corev1.ConditionTrue, 1), ready(corev1.ConditionFalse, 2)) {
		t.Error("a node going NotReady woke it, though no drain decision reads readiness")
	}
	cordoned := ready(corev1.ConditionTrue, 1)
	cordoned.Spec.Unschedulable = true
	if !drainNodeChanged(ready(corev1.ConditionTrue, 1), cordoned) {
		t.Error("a cordon did not wake it")
	}
	untainted, tainted := ready(corev1.ConditionTrue, 1), ready(corev1.ConditionTrue, 1)
	tainted.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	if drainNodeChanged(tainted, untainted) {
		t.Error("kube-controller-manager lifting a not-ready taint woke it")
	}
	relabelled := ready(corev1.ConditionTrue, 1)
	relabelled.Labels["pool"] = "b"
	if !drainNodeChanged(ready(corev1.ConditionTrue, 1), relabelled) {
		t.Error("a node moved to another pool did not wake it")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	churn := pod.DeepCopy()
	churn.Status.PodIP = "10.0.0.7"
	churn.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}}
	if drainPodChanged(pod, churn) {
		t.Error("a pod's status churn woke the drain controller")
	}
	becameReady := pod.DeepCopy()
	becameReady.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if !drainPodChanged(pod, becameReady) {
		t.Error("a pod becoming Ready (which a PodDisruptionBudget counts) did not wake it")
	}
	ending := pod.DeepCopy()
	now := metav1.Now()
	ending.DeletionTimestamp = &now
	if !drainPodChanged(pod, ending) {
		t.Error("an evicted pod ending did not wake it")
	}
}

// TestZonesIgnoreHeartbeatsButNotAZoneMoved: the zone controller's pass (every
// Node and state listed) runs for what a move depends on, the zone the plugin
// records included, and not for a kubelet's heartbeat.
func TestZonesIgnoreHeartbeatsButNotAZoneMoved(t *testing.T) {
	node := func(zone string, beat int64) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{zones.ZoneAnnotation: zone}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: metav1.Unix(beat, 0)}}}}
	}
	for _, moves := range []bool{true, false} {
		changed := zoneNodeChanged(moves)
		if changed(node("global", 1), node("global", 2)) {
			t.Errorf("moves %v: a heartbeat woke the zone controller", moves)
		}
		if !changed(node("global", 1), node("n1", 1)) {
			t.Errorf("moves %v: the plugin recording the node in its new zone did not wake the zone controller: the move would not finish", moves)
		}
		cordoned := node("global", 1)
		cordoned.Spec.Unschedulable = true
		if !changed(node("global", 1), cordoned) {
			t.Errorf("moves %v: a cordon did not wake the zone controller", moves)
		}
		down := node("global", 1)
		down.Status.Conditions[0].Status = corev1.ConditionUnknown
		for what, woke := range map[string]bool{"going down": changed(node("global", 1), down), "coming back": changed(down, node("global", 1))} {
			if woke != moves {
				t.Errorf("moves %v: a node %s woke the zone controller: %v, want %v (a node down is not moved; one that only reports writes nothing readiness changes)",
					moves, what, woke, moves)
			}
		}
	}
}

func TestDrainsAndZonesIgnoreALiveChangesStatusButNotTheSpec(t *testing.T) {
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Generation: 3}}
	progressed := cn.DeepCopy()
	progressed.Status.Change = &v1alpha1.NetworkChange{ID: "mtu-3-1", Phase: v1alpha1.PhasePreconditions, Ready: 2000}
	if networkChangedBeyondItsStatus(cn, progressed) {
		t.Error("a live change's progress woke the drain and zone controllers: every node read again for each status write")
	}
	edited := cn.DeepCopy()
	edited.Generation = 4
	edited.Spec.Drain.Disabled = true
	if !networkChangedBeyondItsStatus(cn, edited) {
		t.Error("an edit of the spec (the drain policy) did not wake them")
	}
	nudged := cn.DeepCopy()
	nudged.Annotations = map[string]string{"example.com/look-again": "1"}
	if !networkChangedBeyondItsStatus(cn, nudged) {
		t.Error("an annotation did not wake them")
	}
	deleted := cn.DeepCopy()
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	if !networkChangedBeyondItsStatus(cn, deleted) {
		t.Error("the network's deletion did not wake them")
	}
}
