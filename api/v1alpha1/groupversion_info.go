// Package v1alpha1 holds the netshift.io/v1alpha1 API: the cluster network as
// the user wants it (ClusterNetwork), the node pools that bound how many nodes
// change at once (NodePool), and one NodeNetworkState per node carrying the
// operator's plan for the node and what happened there.
//
// +kubebuilder:object:generate=true
// +groupName=netshift.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every netshift resource.
	GroupVersion = schema.GroupVersion{Group: "netshift.io", Version: "v1alpha1"}

	// SchemeBuilder registers the netshift types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the netshift types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
