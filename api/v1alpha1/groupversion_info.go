// Package v1alpha1 holds the netshift.io/v1alpha1 API: the cluster network as
// the user wants it (NetshiftNetwork), the node pools that bound how many nodes
// change at once (NetshiftNodePool), and one NetshiftNodeState per node carrying the
// operator's plan for the node and what happened there.
//
// +kubebuilder:object:generate=true
// +groupName=netshift.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every netshift resource.
	GroupVersion = schema.GroupVersion{Group: "netshift.io", Version: "v1alpha1"}

	// SchemeBuilder collects the netshift types (each file registers its own).
	SchemeBuilder = &schemeBuilder{}

	// AddToScheme adds the netshift types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// schemeBuilder keeps this package's imports to apimachinery, as an API
// package's should be.
type schemeBuilder struct{ types []runtime.Object }

// Register adds types to what AddToScheme registers.
func (b *schemeBuilder) Register(objs ...runtime.Object) { b.types = append(b.types, objs...) }

// AddToScheme registers the types under GroupVersion.
func (b *schemeBuilder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, b.types...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
