package ovnk

import (
	"bytes"
	"embed"
	"fmt"
	"text/template"
)

//go:embed manifests/*.yaml
var manifests embed.FS

// zoneScript is sourced by every node container: the node's zone from its
// label, and what it means for the container.
//
//go:embed ovnkube-zone.sh
var zoneScript []byte

// ZoneScript is where the image holds it.
const ZoneScript = "/usr/libexec/lab/ovnkube-zone"

// Namespace is where OVN-Kubernetes runs.
const Namespace = "ovn-kubernetes"

// GatewayBridge is the node's gateway bridge: ovnkube takes the name after
// "br" as its uplink, eth0.
const GatewayBridge = "breth0"

// Cluster is what the manifests are written for.
type Cluster struct {
	// APIServer is the URL the plugin reaches the API server at.
	APIServer string
	// ClusterSubnets is the pod network and each node's prefix ("198.18.0.0/16/24").
	ClusterSubnets string
	// ServiceCIDR is the cluster's service range.
	ServiceCIDR string
	// MTU and EncapPort are the pods' MTU and the Geneve port.
	MTU, EncapPort int
	// ControlPlaneNode runs the cluster manager (the lab's control plane is no node).
	ControlPlaneNode string
	// GatewayBridge is the node's gateway bridge.
	GatewayBridge string
	// CentralAddress is where the nodes reach the central zone's databases
	// (the control plane node's address).
	CentralAddress string
	// CentralReplicas is ovnkube-master's: 1, or 0 when every node has its
	// own zone.
	CentralReplicas int
	// Interconnect: ovnkube runs with OVN interconnect (false: the legacy layout).
	Interconnect bool
}

// Manifests are OVN-Kubernetes' objects, as YAML.
func Manifests(c Cluster) ([]byte, error) {
	t, err := template.ParseFS(manifests, "manifests/ovn-kubernetes.yaml")
	if err != nil {
		return nil, err
	}
	t.Option("missingkey=error")
	var out bytes.Buffer
	if err := t.Execute(&out, c); err != nil {
		return nil, fmt.Errorf("OVN-Kubernetes manifests: %w", err)
	}
	return out.Bytes(), nil
}

// ChainedConfig is the node's CNI configuration: ovnkube's own plugin first
// (what ovnkube-node writes into 10-ovn-kubernetes.conf), then the lab's
// plugin turning the pod's TX checksum offload off, which the nodes'
// userspace datapath needs.
func ChainedConfig(labPlugin string) []byte {
	return []byte(fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "ovn-kubernetes",
  "plugins": [
    {"type": "ovn-k8s-cni-overlay", "ipam": {}, "dns": {}, "logFile": "/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log", "logLevel": "4"},
    {"type": %q, "checksumOffloadOff": true}
  ]
}
`, labPlugin))
}

// ChainedConfigFile is its name: it sorts before ovnkube's own .conf, so the
// runtime loads it.
const ChainedConfigFile = "05-lab-ovn-kubernetes.conflist"
