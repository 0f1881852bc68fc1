package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPlacementIsTheDaemonSets: which nodes the agent runs on, from its
// DaemonSet's pod template as the DaemonSet controller places it.
func TestPlacementIsTheDaemonSets(t *testing.T) {
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	linux := map[string]string{corev1.LabelOSStable: "linux", "pool": "web"}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "pool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"batch"}}}}}}}},
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "storage"}},
	}}
	for _, c := range []struct {
		node       *corev1.Node
		pod        *corev1.Pod
		runs       bool
		whyOrWhere string
	}{
		{node("plain", linux), pod, true, "a Linux node of its selector"},
		{node("win", map[string]string{corev1.LabelOSStable: "windows"}), nil, false, "Windows, with no DaemonSet read"},
		{node("unlabelled", nil), nil, true, "no OS label, no DaemonSet read"},
		{node("batch", map[string]string{corev1.LabelOSStable: "linux", "pool": "batch"}), pod, false, "outside its affinity"},
		{node("gpu", linux, gpu), pod, false, "a NoSchedule taint it does not tolerate"},
		{node("storage", linux, corev1.Taint{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoExecute}), pod, true, "a taint it tolerates"},
		{node("prefer", linux, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectPreferNoSchedule}), pod, true, "a PreferNoSchedule taint"},
		{node("down", linux, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
			corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}), pod, true, "the control plane's taints of a down node"},
		{node("cordoned", linux, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), pod, true, "cordoned"},
	} {
		if got := placement(c.pod)(c.node); got != c.runs {
			t.Errorf("node %s (%s): runs the agent %v, want %v", c.node.Name, c.whyOrWhere, got, c.runs)
		}
	}
}
