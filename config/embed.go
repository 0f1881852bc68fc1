// Package config holds netshift's manifests: the CRDs (generated from api/),
// RBAC, the admission policy, the operator Deployment and the agent DaemonSet,
// and samples. They are embedded so that the demo, the lab and the tests
// install exactly the files users apply with `kubectl apply -k config/default`.
package config

import "embed"

// Install is what a control plane needs before netshift runs on it: the CRDs,
// RBAC and the admission policy (not the workloads: the demo and the lab run
// the operator and agents as processes).
//
//go:embed crd/*.yaml rbac/*.yaml policy/*.yaml
var Install embed.FS

// Samples are the example NodePools and Nodes.
//
//go:embed samples/*.yaml
var Samples embed.FS

// Kustomize is every kustomization (default, lab, portpools) with what they
// reference, for the lab to install netshift the way users do:
// `kubectl apply -k` of a directory it writes them into.
//
//go:embed crd/*.yaml rbac/*.yaml policy/*.yaml manager/*.yaml agent/*.yaml default/*.yaml lab/*.yaml lab-ovn/*.yaml lab-ovn-zones/*.yaml lab-neutron/*.yaml portpools/*.yaml
var Kustomize embed.FS
