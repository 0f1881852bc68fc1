package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetshiftChangePlanName is the name of the one NetshiftChangePlan a cluster has.
const NetshiftChangePlanName = "cluster"

// NetshiftChangePlan is the live change every node runs, written once for the
// whole cluster by netshift's operator: its preconditions while it has no T0,
// its steps from T0 once it has one. Every agent watches it; a node whose own
// NetshiftNodeState carries a plan (a rollback, or a node left behind by a
// failed change) runs that one instead. It exists only while a change is in
// progress. Only the operator writes it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nsplan,categories=netshift
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="metadata.name must be \"cluster\": a cluster runs one live change at a time"
// +kubebuilder:printcolumn:name="Change",type=string,JSONPath=`.spec.id`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="From",type=integer,JSONPath=`.spec.from`
// +kubebuilder:printcolumn:name="To",type=integer,JSONPath=`.spec.to`
// +kubebuilder:printcolumn:name="T0",type=string,JSONPath=`.spec.t0`
type NetshiftChangePlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is every node's part of the change in progress (NetshiftNetwork status.change).
	Spec LiveChangePlan `json:"spec"`
}

// NetshiftChangePlanList is a list of NetshiftChangePlans.
// +kubebuilder:object:root=true
type NetshiftChangePlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetshiftChangePlan `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NetshiftChangePlan{}, &NetshiftChangePlanList{})
}
