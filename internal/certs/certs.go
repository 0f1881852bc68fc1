// Package certs issues the certificates netshift's test and lab servers
// and clients present: a CA, serving certificates it signs for the names and
// addresses clients verify, and client certificates.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority of its own: clients trust its PEM.
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
	// PEM is the CA certificate, for clients to trust.
	PEM []byte
}

// NewCA creates a CA named name, valid from an hour ago for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", name, err)
	}
	return &CA{cert: cert, key: key, serial: 1, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Serving issues a server certificate for the DNS names and addresses,
// returning the certificate and its private key, PEM-encoded.
func (ca *CA) Serving(name string, dnsNames []string, ips []net.IP, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	return ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: name}, DNSNames: dnsNames, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, validity)
}

// Client issues a client certificate named name (a TLS server that asks for
// one, such as an ovsdb-server with a CA, checks it was issued for client
// use), returning the certificate and its private key, PEM-encoded.
func (ca *CA) Client(name string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	return ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, validity)
}

// issue signs tmpl (its subject, names and extended key usage) with a new
// key, valid from an hour ago for validity.
func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := NewKey()
	if err != nil {
		return nil, nil, err
	}
	ca.serial++
	now := time.Now()
	tmpl.SerialNumber = big.NewInt(ca.serial)
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	if keyPEM, err = KeyPEM(key); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// NewKey is a P-256 key, what every certificate here uses.
func NewKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

// KeyPEM encodes a private key as an EC PRIVATE KEY block.
func KeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
