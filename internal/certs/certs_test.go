package certs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"
)

// A serving certificate verifies against its CA for the names and addresses
// it was issued for, and for no other.
func TestServingVerifiesAgainstItsCA(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Serving("server", []string{"kubernetes.default"}, []net.IP{net.ParseIP("10.96.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("CA PEM not readable")
	}
	for name, want := range map[string]bool{"kubernetes.default": true, "10.96.0.1": true, "example.com": false, "10.96.0.2": false} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		if (err == nil) != want {
			t.Errorf("verify for %s: %v, want ok=%v", name, err, want)
		}
	}
	other, _ := NewCA("other", time.Hour)
	otherRoots := x509.NewCertPool()
	otherRoots.AppendCertsFromPEM(other.PEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: otherRoots, DNSName: "kubernetes.default"}); err == nil {
		t.Error("verified against a CA that did not issue it")
	}
}

// A client certificate verifies against its CA for client use only: a server
// that checks what a certificate was issued for refuses it as a server's.
func TestClientIsForClientUseOnly(t *testing.T) {
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Client("netshift-operator", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client use: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("a client certificate verified for server use")
	}
	if leaf.Subject.CommonName != "netshift-operator" {
		t.Errorf("common name %q", leaf.Subject.CommonName)
	}
}
