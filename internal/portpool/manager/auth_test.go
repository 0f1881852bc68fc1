package manager

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"netshift.io/netshift/internal/certs"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTCPAPINeedsTLSAndAnAllowedToken: over TCP the pool API speaks TLS only
// and answers a bearer token only for what RBAC grants its user on
// portpools.netshift.io: a reader lists and may not populate, an admin
// populates; no token, or a token the API server does not know, gets nothing.
func TestTCPAPINeedsTLSAndAnAllowedToken(t *testing.T) {
	f := newFixture(t)
	m, _ := f.start(testSettings(), false)
	dir := t.TempDir()
	files, caFile := selfSigned(t, dir)
	if _, err := Listen("tcp:127.0.0.1:0", TLSFiles{}); err == nil || !strings.Contains(err.Error(), "TLS is required") {
		t.Errorf("a TCP API without TLS: %v, want a refusal", err)
	}
	l, err := Listen("tcp:127.0.0.1:0", files)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Serve(f.ctx, l, KubeAuthorizer{Client: operatorClient(t)}) }()
	addr := "tcp:" + l.Addr().String()

	reader, admin := f.tokenWithVerbs("reader", "get"), f.tokenWithVerbs("admin", "get", "create", "delete")
	call := func(token string) *Client {
		c, err := NewClient(addr, ClientOptions{Token: token, CAFile: caFile})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := call(reader).List(f.ctx); err != nil {
		t.Errorf("a reader listing: %v", err)
	}
	if _, err := call(reader).Populate(f.ctx, f.key.String(), 1); err == nil || !strings.Contains(err.Error(), "may not create portpools.netshift.io") || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("a reader populating: %v, want 403 naming the verb", err)
	}
	if n, err := call(admin).Populate(f.ctx, f.key.String(), 1); err != nil || n != 1 {
		t.Errorf("an admin populating: %d, %v", n, err)
	}
	if _, err := call("").List(f.ctx); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("no token: %v, want 401", err)
	}
	if _, err := call("not-a-token").List(f.ctx); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("an unknown token: %v, want 401", err)
	}
	// The unix socket is for root alone.
	sock := filepath.Join(dir, "portpool.sock")
	ul, err := Listen(sock, TLSFiles{})
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the API socket's mode: %v (%v), want 0600", st.Mode().Perm(), err)
	}
	// Clear text never gets an answer.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + l.Addr().String() + "/v1/pools")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP was answered 200")
		}
	}
}

// tokenWithVerbs is a ServiceAccount token whose user RBAC allows verbs on
// portpools.netshift.io.
func (f *fixture) tokenWithVerbs(name string, verbs ...string) string {
	f.t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-" + name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{APIGroup}, Resources: []string{APIResource}, Verbs: verbs}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: f.ns}}}
	for _, o := range []client.Object{role, sa, binding} {
		if err := env.Client.Create(f.ctx, o); err != nil {
			f.t.Fatal(err)
		}
		f.t.Cleanup(func() { _ = env.Client.Delete(f.ctx, o) })
	}
	cs, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		f.t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(f.ns).CreateToken(f.ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return tr.Status.Token
}

// selfSigned writes a serving certificate for 127.0.0.1 and its key, and
// returns them with the file of the CA that issued it, for the client.
func selfSigned(t *testing.T, dir string) (TLSFiles, string) {
	t.Helper()
	ca, err := certs.NewCA("netshift-portpool-test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := ca.Serving("netshift-portpool", nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files := TLSFiles{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	caFile := filepath.Join(dir, "ca.crt")
	for name, data := range map[string][]byte{files.Cert: crt, files.Key: key, caFile: ca.PEM} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files, caFile
}
