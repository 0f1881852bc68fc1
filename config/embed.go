// Package config holds netshift's manifests: the CRDs (generated from api/),
// RBAC, the admission policy, the operator Deployment and the agent DaemonSet,
// and samples. They are embedded so that the demo, the lab and the tests
// install exactly the files users apply with `kubectl apply -k config/default`.
package config

import "embed"

// Install is what a test control plane needs before netshift runs on it as
// processes (the demo's, the tests'): the CRDs, RBAC (with the port pools' and
// the zone controller's), the admission policy, the agents' priority level and
// the bindings of the lab's user groups (lab-groups). Not the workloads.
//
//go:embed crd/*.yaml rbac/*.yaml policy/*.yaml flowcontrol/*.yaml components/*/*.yaml lab-groups/*.yaml
var Install embed.FS

// Samples are the example NetshiftNodePools and Nodes.
//
//go:embed samples/*.yaml
var Samples embed.FS

// Kustomize is every kustomization (default, lab, portpools, ovn-zones) with what they
// reference, for the lab to install netshift the way users do:
// `kubectl apply -k` of a directory it writes them into.
//
//go:embed crd/*.yaml rbac/*.yaml policy/*.yaml flowcontrol/*.yaml components/*/*.yaml ovn-zones/*.yaml manager/*.yaml agent/*.yaml default/*.yaml lab/*.yaml lab-ovn/*.yaml lab-ovn-zones/*.yaml lab-neutron/*.yaml lab-ovn-kubernetes/*.yaml lab-ovn-kubernetes-zones/*.yaml ovn-kubernetes/*.yaml ovn-kubernetes-zones/*.yaml portpools/*.yaml
var Kustomize embed.FS
