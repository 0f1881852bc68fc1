package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/certs"
	"netshift.io/netshift/internal/operator"
)

// OVNClientSecret is the Secret, in netshift-system, holding the client
// certificate netshift's operator presents to the central OVN databases
// (tls.crt, tls.key) and the CA their certificates chain to (ca.crt):
// config/lab-ovn mounts it at /ovn-cert, as OVN-Kubernetes mounts its own.
const OVNClientSecret = "netshift-ovn-cert"

// The central databases' PKI lives in the lab's state directory: a CA of the
// lab's own, a certificate for each database, named ovnnb and ovnsb (its CN
// and DNS name, as ovs-pki makes them, and the machine's underlay address),
// and the operator's client certificate.
func (s *State) ovnPKI(file string) string { return s.Path("ovn-pki", file) }

// writeOVNPKI issues the PKI once: central databases started again (the
// central zone of a zone layout) keep serving the same certificates. The CA
// is written last, so that its file means the PKI is whole.
func (s *State) writeOVNPKI() error {
	if _, err := os.Stat(s.ovnPKI("ca.crt")); err == nil {
		return nil
	}
	const validity = 10 * 365 * 24 * time.Hour
	ca, err := certs.NewCA("netshift-lab-ovn-ca", validity)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	for _, db := range []string{"nb", "sb"} {
		crt, key, err := ca.Serving("ovn"+db, []string{"ovn" + db}, []net.IP{net.ParseIP(hostIP)}, validity)
		if err != nil {
			return fmt.Errorf("OVN %s certificate: %w", db, err)
		}
		files[db+".crt"], files[db+".key"] = crt, key
	}
	crt, key, err := ca.Client("netshift-operator", validity)
	if err != nil {
		return fmt.Errorf("OVN client certificate: %w", err)
	}
	files["tls.crt"], files["tls.key"] = crt, key
	if err := os.MkdirAll(filepath.Dir(s.ovnPKI("ca.crt")), 0o700); err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(s.ovnPKI(name), data, 0o600); err != nil {
			return fmt.Errorf("OVN PKI: %w", err)
		}
	}
	return os.WriteFile(s.ovnPKI("ca.crt"), ca.PEM, 0o600)
}

// centralSSLArgs serve a central database (nb or sb) over SSL: its
// certificate, and the CA it checks clients' certificates against (it asks
// every SSL client for one).
func (s *State) centralSSLArgs(db string) []string {
	return []string{"--private-key=" + s.ovnPKI(db+".key"), "--certificate=" + s.ovnPKI(db+".crt"), "--ca-cert=" + s.ovnPKI("ca.crt")}
}

// createOVNSecret puts the operator's client certificate and the CA into
// OVNClientSecret, before netshift is installed.
func (s *State) createOVNSecret(ctx context.Context, c client.Client) error {
	data := map[string][]byte{}
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		b, err := os.ReadFile(s.ovnPKI(f))
		if err != nil {
			return fmt.Errorf("secret %s: %w", OVNClientSecret, err)
		}
		data[f] = b
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operator.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: OVNClientSecret}, Type: corev1.SecretTypeTLS, Data: data}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("secret %s: %w", OVNClientSecret, err)
	}
	return nil
}
