package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"netshift.io/netshift/internal/certs"
)

// kubernetesServiceIP is the first address of the service range: the
// kubernetes Service's, which pods reach the API server at.
func kubernetesServiceIP(cidr string) (net.IP, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("service range %q: %w", cidr, err)
	}
	return net.IP(p.Masked().Addr().Next().AsSlice()), nil
}

// writeServingCerts writes into dir what the API server serves with, in the
// files envtest would otherwise make: a CA, a serving certificate that also
// names the addresses a cluster reaches it at (its address and the kubernetes
// Service's, which in-cluster clients verify), and the service account
// signing key. It returns the CA, which clients trust.
func writeServingCerts(dir string, ips []net.IP) ([]byte, error) {
	const tenYears = 10 * 365 * 24 * time.Hour
	ca, err := certs.NewCA("netshift-lab-ca", tenYears)
	if err != nil {
		return nil, err
	}
	crt, key, err := ca.Serving("kube-apiserver", []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		append([]net.IP{net.ParseIP("127.0.0.1")}, ips...), tenYears)
	if err != nil {
		return nil, err
	}
	saKey, err := certs.NewKey()
	if err != nil {
		return nil, err
	}
	saPEM, err := certs.KeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"apiserver.crt": crt, "apiserver.key": key, "sa-signer.key": saPEM,
		"sa-signer.crt": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return ca.PEM, nil
}
