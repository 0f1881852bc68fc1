package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"netshift.io/netshift/api/v1alpha1"
)

// compiledTerm is a NodeSelectorTerm parsed once, so that matching a node is
// map lookups with no allocation: pool membership is recomputed for every
// node on every drain pass.
type compiledTerm struct {
	labels labels.Selector // nil when the term has no matchExpressions
	// names is the matchFields requirements on metadata.name.
	names []nameRequirement
	empty bool
}

type nameRequirement struct {
	in     bool // In when true, NotIn when false
	values map[string]struct{}
}

var selectionOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

// compileTerm follows Kubernetes' semantics: every requirement of a term must
// hold; a term with no requirements matches no node; matchFields supports
// only metadata.name with In or NotIn and exactly one value.
func compileTerm(t v1alpha1.NodeSelectorTerm) (compiledTerm, error) {
	ct := compiledTerm{empty: len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0}
	if len(t.MatchExpressions) > 0 {
		sel := labels.NewSelector()
		for i, r := range t.MatchExpressions {
			op, ok := selectionOps[r.Operator]
			if !ok {
				return ct, fmt.Errorf("matchExpressions[%d].operator: %q is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt", i, r.Operator)
			}
			lr, err := labels.NewRequirement(r.Key, op, r.Values)
			if err != nil {
				return ct, fmt.Errorf("matchExpressions[%d]: %w", i, err)
			}
			sel = sel.Add(*lr)
		}
		ct.labels = sel
	}
	for i, r := range t.MatchFields {
		if r.Key != "metadata.name" {
			return ct, fmt.Errorf("matchFields[%d].key: %q is not supported; only metadata.name", i, r.Key)
		}
		if r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn {
			return ct, fmt.Errorf("matchFields[%d].operator: %q is not supported; only In or NotIn", i, r.Operator)
		}
		if len(r.Values) != 1 {
			return ct, fmt.Errorf("matchFields[%d].values: has %d values, must have exactly one", i, len(r.Values))
		}
		ct.names = append(ct.names, nameRequirement{in: r.Operator == corev1.NodeSelectorOpIn, values: map[string]struct{}{r.Values[0]: {}}})
	}
	return ct, nil
}

func (t compiledTerm) matches(n Node) bool {
	if t.empty {
		return false
	}
	if t.labels != nil && !t.labels.Matches(labels.Set(n.Labels)) {
		return false
	}
	for _, r := range t.names {
		if _, ok := r.values[n.Name]; ok != r.in {
			return false
		}
	}
	return true
}
