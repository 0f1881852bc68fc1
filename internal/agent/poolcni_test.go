package agent

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestNodeKubeconfigIsWrittenWhole: netshift-cni's identity is the node's
// kubeconfig with its credentials inlined (the plugin cannot read the
// kubelet's files where they are mounted in the agent), rewritten only when
// the node's credentials change, and readable by root alone.
func TestNodeKubeconfigIsWrittenWhole(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(pki, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("client.pem", "CERT-1")
	write("client.key", "KEY-1")
	write("ca.pem", "CA")
	node := clientcmdapi.NewConfig()
	node.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://198.19.0.254:6443", CertificateAuthority: "pki/ca.pem"}
	node.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: "pki/client.pem", ClientKey: "pki/client.key"}
	node.Contexts["default"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "node"}
	node.CurrentContext = "default"
	from := filepath.Join(dir, "kubelet.conf")
	if err := clientcmd.WriteToFile(*node, from); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, "net.d", "netshift-cni", "kubeconfig")
	if changed, err := writeNodeKubeconfig(from, to); err != nil || !changed {
		t.Fatalf("first write: %v, changed %v", err, changed)
	}
	got, err := clientcmd.LoadFromFile(to)
	if err != nil {
		t.Fatal(err)
	}
	auth := got.AuthInfos["node"]
	if string(auth.ClientCertificateData) != "CERT-1" || string(auth.ClientKeyData) != "KEY-1" || string(got.Clusters["c"].CertificateAuthorityData) != "CA" ||
		auth.ClientCertificate != "" {
		t.Fatalf("credentials not inlined: %+v", auth)
	}
	if fi, err := os.Stat(to); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v: want 0600", fi.Mode(), err)
	}
	if changed, err := writeNodeKubeconfig(from, to); err != nil || changed {
		t.Fatalf("nothing changed: %v, changed %v", err, changed)
	}
	write("client.pem", "CERT-2") // the kubelet rotated its certificate
	if changed, err := writeNodeKubeconfig(from, to); err != nil || !changed {
		t.Fatalf("after a rotation: %v, changed %v", err, changed)
	}
	if got, _ := clientcmd.LoadFromFile(to); string(got.AuthInfos["node"].ClientCertificateData) != "CERT-2" {
		t.Fatal("the rotated certificate was not written")
	}
	if _, err := writeNodeKubeconfig(filepath.Join(dir, "absent"), to); err == nil {
		t.Fatal("a missing node kubeconfig was accepted")
	}
}
