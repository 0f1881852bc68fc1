package ovnk

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestManifestsCarryTheClustersValues: every value reaches the objects, and
// every document is YAML.
func TestManifestsCarryTheClustersValues(t *testing.T) {
	out, err := Manifests(Cluster{APIServer: "https://198.19.0.254:6443", ClusterSubnets: "198.18.0.0/16/24", ServiceCIDR: "198.19.128.0/24",
		MTU: 1442, EncapPort: 6081, ControlPlaneNode: "node-1", GatewayBridge: GatewayBridge,
		CentralAddress: "198.18.0.1", CentralReplicas: 0, Interconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`mtu: "1442"`, `encap_port: "6081"`, "k8s_apiserver: https://198.19.0.254:6443", "kubernetes.io/hostname: node-1", "--gateway-interface breth0", "central_db_host: 198.18.0.1", "replicas: 0",
		`{name: OVN_ENABLE_INTERCONNECT, value: "true"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the manifests lack %q", want)
		}
	}
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("a document is not YAML: %v\n%s", err, doc)
		}
		kinds[obj.Kind]++
	}
	if kinds["DaemonSet"] != 1 || kinds["Deployment"] != 2 || kinds["ConfigMap"] != 1 {
		t.Errorf("objects: %v", kinds)
	}
}

func TestImageNeedsTheBinaries(t *testing.T) {
	if _, err := Image(t.TempDir(), "/bin/busybox", "/usr/bin/kubectl"); err == nil || !strings.Contains(err.Error(), "ovnkube") {
		t.Fatalf("an empty directory: %v", err)
	}
}
