package rollout

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"netshift.io/netshift/api/v1alpha1"
)

func pool(t testing.TB, name string, prio int32, maxParallel intstr.IntOrString, terms ...v1alpha1.NodeSelectorTerm) Pool {
	t.Helper()
	p, err := NewPool(&v1alpha1.NetshiftNodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NetshiftNodePoolSpec{Priority: ptr.To(prio), MaxParallel: &maxParallel, NodeSelectorTerms: terms},
	})
	if err != nil {
		t.Fatalf("NewPool(%s): %v", name, err)
	}
	return p
}

// namesIn selects nodes by name: one term per name, since Kubernetes allows a
// single value per matchFields requirement.
func namesIn(names ...string) []v1alpha1.NodeSelectorTerm {
	var terms []v1alpha1.NodeSelectorTerm
	for _, n := range names {
		terms = append(terms, v1alpha1.NodeSelectorTerm{MatchFields: []v1alpha1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}})
	}
	return terms
}

func labelIn(key string, values ...string) v1alpha1.NodeSelectorTerm {
	return v1alpha1.NodeSelectorTerm{MatchExpressions: []v1alpha1.NodeSelectorRequirement{
		{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}
}

func nodes(names ...string) []Node {
	out := make([]Node, len(names))
	for i, n := range names {
		out[i] = Node{Name: n}
	}
	return out
}

// examplePools is the example: pool1 selects A, B, C (priority 1,
// maxParallel 1); pool2 selects C, D, E (priority 99, maxParallel 2).
func examplePools(t testing.TB) []Pool {
	return []Pool{
		pool(t, "pool1", 1, intstr.FromInt32(1), namesIn("A", "B", "C")...),
		pool(t, "pool2", 99, intstr.FromInt32(2), namesIn("C", "D", "E")...),
	}
}

func TestResolveExample(t *testing.T) {
	m := Resolve(nodes("A", "B", "C", "D", "E"), examplePools(t))
	want := map[string]string{"A": "pool1", "B": "pool1", "C": "pool1", "D": "pool2", "E": "pool2"}
	if !reflect.DeepEqual(m.Owner, want) {
		t.Fatalf("owners = %v, want %v", m.Owner, want)
	}
	if got := m.Limit; got["pool1"] != 1 || got["pool2"] != 2 {
		t.Fatalf("limits = %v, want pool1:1 pool2:2", got)
	}
}

func TestWavesExample(t *testing.T) {
	m := Resolve(nodes("A", "B", "C", "D", "E"), examplePools(t))
	if got, want := m.Waves([]string{"C", "D", "E"}), [][]string{{"C", "D", "E"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("waves(C,D,E) = %v, want %v", got, want)
	}
	if got, want := m.Waves([]string{"A", "B", "C", "D", "E"}), [][]string{{"A", "D", "E"}, {"B"}, {"C"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("waves(all) = %v, want %v", got, want)
	}
}

func TestResolveOwnership(t *testing.T) {
	zoneA := labelIn("zone", "a")
	cases := []struct {
		name  string
		nodes []Node
		pools []Pool
		want  map[string]string
	}{
		{"no pools: everything in default", nodes("n1", "n2"), nil,
			map[string]string{"n1": "default", "n2": "default"}},
		{"empty selector selects every node", nodes("n1", "n2"),
			[]Pool{pool(t, "all", 50, intstr.FromInt32(1))},
			map[string]string{"n1": "all", "n2": "all"}},
		{"term without expressions selects nothing", nodes("n1"),
			[]Pool{pool(t, "none", 1, intstr.FromInt32(1), v1alpha1.NodeSelectorTerm{})},
			map[string]string{"n1": "default"}},
		{"lower priority number wins", []Node{{Name: "n1", Labels: map[string]string{"zone": "a"}}},
			[]Pool{pool(t, "b-low", 10, intstr.FromInt32(1), zoneA), pool(t, "a-high", 20, intstr.FromInt32(1), zoneA)},
			map[string]string{"n1": "b-low"}},
		{"equal priority: name first in byte order", []Node{{Name: "n1", Labels: map[string]string{"zone": "a"}}},
			[]Pool{pool(t, "pb", 10, intstr.FromInt32(1), zoneA), pool(t, "Pa", 10, intstr.FromInt32(1), zoneA)},
			map[string]string{"n1": "Pa"}},
		{"terms are ORed", []Node{{Name: "x", Labels: map[string]string{"zone": "b"}}, {Name: "y"}},
			[]Pool{pool(t, "p", 1, intstr.FromInt32(1), zoneA, labelIn("zone", "b"), namesIn("y")[0])},
			map[string]string{"x": "p", "y": "p"}},
		{"Gt on a numeric label", []Node{{Name: "big", Labels: map[string]string{"rack": "12"}}, {Name: "small", Labels: map[string]string{"rack": "3"}}},
			[]Pool{pool(t, "p", 1, intstr.FromInt32(1), v1alpha1.NodeSelectorTerm{MatchExpressions: []v1alpha1.NodeSelectorRequirement{
				{Key: "rack", Operator: corev1.NodeSelectorOpGt, Values: []string{"10"}}}})},
			map[string]string{"big": "p", "small": "default"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Resolve(c.nodes, c.pools).Owner; !reflect.DeepEqual(got, c.want) {
				t.Fatalf("owners = %v, want %v", got, c.want)
			}
		})
	}
}

func TestResolveLimit(t *testing.T) {
	cases := []struct {
		v       intstr.IntOrString
		owned   int
		want    int
		wantErr bool
	}{
		{intstr.FromInt32(0), 10, 0, false},
		{intstr.FromInt32(3), 10, 3, false},
		{intstr.FromInt32(30), 10, 30, false},
		{intstr.FromString("50%"), 10, 5, false},
		{intstr.FromString("33%"), 10, 3, false}, // rounded down
		{intstr.FromString("1%"), 10, 1, false},  // at least 1
		{intstr.FromString("100%"), 7, 7, false},
		{intstr.FromString("10%"), 0, 1, false},
		{intstr.FromInt32(-1), 10, 0, true},
		{intstr.FromString("0%"), 10, 0, true},
		{intstr.FromString("150%"), 10, 0, true},
		{intstr.FromString("abc"), 10, 0, true},
		{intstr.FromString("5"), 10, 0, true},
		{intstr.FromString("+50%"), 10, 0, true}, // the API server refuses these: so does plan
		{intstr.FromString(" 50%"), 10, 0, true},
		{intstr.FromString("050%"), 10, 0, true},
		{intstr.FromInt32(10000), 10, 10000, false},
		{intstr.FromInt32(10001), 10, 0, true},
	}
	for _, c := range cases {
		got, err := ResolveLimit(c.v, c.owned)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ResolveLimit(%s, %d) = %d, %v; want %d, error %v", c.v.String(), c.owned, got, err, c.want, c.wantErr)
		}
	}
}

func TestNewPoolRefusesBadInput(t *testing.T) {
	cases := map[string]v1alpha1.NetshiftNodePool{
		"reserved name":    {ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		"priority 100":     {ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.NetshiftNodePoolSpec{Priority: ptr.To[int32](100)}},
		"maxParallel 150%": {ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.NetshiftNodePoolSpec{MaxParallel: ptr.To(intstr.FromString("150%"))}},
		"bad operator": {ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.NetshiftNodePoolSpec{NodeSelectorTerms: []v1alpha1.NodeSelectorTerm{
			{MatchExpressions: []v1alpha1.NodeSelectorRequirement{{Key: "k", Operator: "Near"}}}}}},
	}
	for name, np := range cases {
		if _, err := NewPool(&np); err == nil {
			t.Errorf("%s: NewPool accepted it", name)
		}
	}
}

func TestPercentageIsOfAllOwnedNodes(t *testing.T) {
	// 10 nodes, 50%: 5 at once, even when only 3 need configuration.
	var ns []string
	for _, c := range "abcdefghij" {
		ns = append(ns, string(c))
	}
	m := Resolve(nodes(ns...), []Pool{pool(t, "half", 1, intstr.FromString("50%"))})
	if got := m.Limit["half"]; got != 5 {
		t.Fatalf("limit = %d, want 5", got)
	}
	if got, want := m.Waves([]string{"a", "b", "c"}), [][]string{{"a", "b", "c"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("waves = %v, want %v", got, want)
	}
	if got := m.Waves(ns); len(got) != 2 || len(got[0]) != 5 {
		t.Fatalf("waves = %v, want two waves of 5", got)
	}
}

func TestUnlimitedPool(t *testing.T) {
	m := Resolve(nodes("a", "b", "c", "d"), []Pool{pool(t, "all", 1, intstr.FromInt32(0))})
	if got := m.Waves([]string{"a", "b", "c", "d"}); len(got) != 1 || len(got[0]) != 4 {
		t.Fatalf("waves = %v, want one wave of 4", got)
	}
}
