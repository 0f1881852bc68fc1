package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterNetworkName is the name of the one ClusterNetwork a cluster has.
const ClusterNetworkName = "cluster"

// OnDrainTimeout says what the drain controller does when a drain outlasts its timeout.
//
// +kubebuilder:validation:Enum=Wait;Fail
type OnDrainTimeout string

const (
	// DrainTimeoutWait: keep the node draining, and report it (node status, Event, condition).
	DrainTimeoutWait OnDrainTimeout = "Wait"
	// DrainTimeoutFail: give up the node's drain: uncordon it if netshift cordoned it, release its
	// slot and mark the node's operation failed.
	DrainTimeoutFail OnDrainTimeout = "Fail"
)

// DrainSettings say how nodes are drained before netshift configures them.
type DrainSettings struct {
	// Disabled configures nodes without cordoning or evicting anything; the pool limits still apply.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// Timeout bounds how long one node's drain may take before OnTimeout applies, e.g. "10m".
	// +optional
	// +kubebuilder:default="10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// OnTimeout is what happens when a drain outlasts Timeout: Wait (keep waiting and report) or
	// Fail (uncordon, release the slot, mark the node's operation failed).
	// +optional
	// +kubebuilder:default=Wait
	OnTimeout OnDrainTimeout `json:"onTimeout,omitempty"`
}

// ClusterNetworkSpec is the cluster's network as the user wants it.
type ClusterNetworkSpec struct {
	// Drain says how nodes are drained while netshift configures them.
	// +optional
	Drain DrainSettings `json:"drain,omitempty"`
}

// ClusterNetworkStatus is what is in force and what is going on.
type ClusterNetworkStatus struct {
	// Conditions are Progressing, Degraded, Upgradeable and Available.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ClusterNetwork is the cluster's network as the user wants it and, in status,
// what is applied. There is one, named "cluster".
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cn
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="metadata.name must be \"cluster\": a cluster has one ClusterNetwork"
type ClusterNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the network as the user wants it.
	// +optional
	Spec ClusterNetworkSpec `json:"spec,omitempty"`
	// Status is what is applied and the operation in progress.
	// +optional
	Status ClusterNetworkStatus `json:"status,omitempty"`
}

// ClusterNetworkList is a list of ClusterNetworks.
//
// +kubebuilder:object:root=true
type ClusterNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterNetwork `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterNetwork{}, &ClusterNetworkList{})
}
