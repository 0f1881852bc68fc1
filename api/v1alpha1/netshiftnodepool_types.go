package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultPoolName names the implicit pool of the nodes that no NetshiftNodePool
// selects. It is reserved: a NetshiftNodePool may not use it.
const DefaultPoolName = "default"

// NodeSelectorRequirement is Kubernetes' NodeSelectorRequirement with its
// rules written into the schema, so that the API server refuses a bad
// operator at once instead of netshift failing later.
//
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : true",message="values must be non-empty when operator is In or NotIn"
// +kubebuilder:validation:XValidation:rule="self.operator in ['Exists', 'DoesNotExist'] ? (!has(self.values) || size(self.values) == 0) : true",message="values must be empty when operator is Exists or DoesNotExist"
// +kubebuilder:validation:XValidation:rule="self.operator in ['Gt', 'Lt'] ? (has(self.values) && size(self.values) == 1 && self.values[0].matches('^-?[0-9]{1,18}$')) : true",message="values must be a single integer of at most 18 digits when operator is Gt or Lt"
type NodeSelectorRequirement struct {
	// Key is the label key (or, in matchFields, the field: only metadata.name) the selector applies
	// to: a label key as Kubernetes allows it, an optional DNS-subdomain prefix and "/", then a name
	// of 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, Gt or Lt.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are the values the operator compares with: non-empty for In and NotIn, empty for
	// Exists and DoesNotExist, a single integer for Gt and Lt. Each is a label value: up to 63
	// letters, digits, "-", "_" or ".", starting and ending with a letter or digit.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	Values []string `json:"values,omitempty"`
}

// NodeSelectorTerm is Kubernetes' NodeSelectorTerm: a node matches when it
// meets every requirement of the term. A term with no requirements matches no
// node, as in Kubernetes.
type NodeSelectorTerm struct {
	// MatchExpressions are requirements on the node's labels.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
	// MatchFields are requirements on the node's fields; only metadata.name is supported.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.key == 'metadata.name' && r.operator in ['In', 'NotIn'] && has(r.values) && size(r.values) == 1)",message="matchFields supports only the key metadata.name, with operator In or NotIn and exactly one value"
	// +listType=atomic
	MatchFields []NodeSelectorRequirement `json:"matchFields,omitempty"`
}

// NetshiftNodePoolSpec selects a set of nodes and bounds how many of them netshift
// configures at once.
type NetshiftNodePoolSpec struct {
	// NodeSelectorTerms select the nodes of the pool: a node belongs to the pool when it matches any
	// term. Empty selects every node.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms,omitempty"`

	// Priority decides which pool owns a node that several pools select: the pool with the lower
	// number wins; on equal priorities, the pool whose name sorts first in byte order. 0 to 99.
	// +optional
	// +kubebuilder:default=99
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=99
	Priority *int32 `json:"priority,omitempty"`

	// MaxParallel is how many of the pool's nodes may be configured (drained) at once: a count from
	// 0 to 10000, or a percentage from "1%" to "100%" of all the nodes the pool owns, rounded down
	// but at least 1. 0 means no limit.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 10000) : self.matches('^([1-9]|[1-9][0-9]|100)%$')",message="maxParallel must be a count from 0 to 10000 (0 = no limit) or a percentage from \"1%\" to \"100%\""
	MaxParallel *intstr.IntOrString `json:"maxParallel,omitempty"`
}

// NetshiftNodePoolStatus is what the operator last computed for the pool.
type NetshiftNodePoolStatus struct {
	// Nodes are the names of the nodes this pool owns, in name order.
	// +optional
	// +listType=atomic
	Nodes []string `json:"nodes,omitempty"`
	// NodeCount is how many nodes the pool owns.
	// +optional
	NodeCount int32 `json:"nodeCount"`
	// Draining is how many of the pool's nodes hold a slot now: a drain's (draining, drained, or
	// configuring without a drain) or a zone move's, each node counted once.
	// +optional
	Draining int32 `json:"draining"`
	// Limit is maxParallel resolved against NodeCount: the most nodes that may hold a slot at once
	// (0 = no limit).
	// +optional
	Limit int32 `json:"limit"`
	// ObservedGeneration is the generation of the spec this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Valid (False when the spec cannot be used: the nodes it might own get no
	// slot until it is fixed) and Overlapping (True when another pool of the same priority owns
	// nodes this one selects).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NetshiftNodePool condition types and reasons.
const (
	// NetshiftNodePoolValid is False when the pool's spec cannot be compiled (stored before the API
	// refused it): netshift holds the nodes it might own.
	NetshiftNodePoolValid = "Valid"
	// NetshiftNodePoolOverlapping is True when nodes the pool selects are owned by another pool of the
	// same priority (whose name sorts first).
	NetshiftNodePoolOverlapping = "Overlapping"

	ReasonSpecValid     = "SpecValid"
	ReasonInvalidSpec   = "InvalidSpec"
	ReasonEqualPriority = "EqualPriority"
	ReasonNoOverlap     = "NoOverlap"
)

// NetshiftNodePool groups nodes and limits how many of them are configured in parallel.
// A node that no pool selects belongs to the implicit pool "default", which
// configures one node at a time.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nsnp,categories=netshift
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="MaxParallel",type=string,JSONPath=`.spec.maxParallel`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="Draining",type=integer,JSONPath=`.status.draining`
// +kubebuilder:validation:XValidation:rule="self.metadata.name != 'default'",message="metadata.name: \"default\" is reserved for the implicit pool of nodes that no NetshiftNodePool selects"
type NetshiftNodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec selects the pool's nodes and sets its priority and parallelism.
	// +optional
	Spec NetshiftNodePoolSpec `json:"spec,omitempty"`
	// Status is the pool's membership and drain count as the operator last computed them.
	// +optional
	Status NetshiftNodePoolStatus `json:"status,omitempty"`
}

// NetshiftNodePoolList is a list of NetshiftNodePools.
//
// +kubebuilder:object:root=true
type NetshiftNodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetshiftNodePool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NetshiftNodePool{}, &NetshiftNodePoolList{})
}
