package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/internal/certs"
	"netshift.io/netshift/internal/ovs"
)

// clientFiles writes a CA's certificate and a client certificate it issued,
// with its key, into dir.
func clientFiles(t *testing.T, dir string) ovs.TLS {
	t.Helper()
	ca, err := certs.NewCA("ovn-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := ca.Client("netshift-operator", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files := ovs.TLS{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), CA: filepath.Join(dir, "ca.crt")}
	for name, data := range map[string][]byte{files.Cert: crt, files.Key: key, files.CA: ca.PEM} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// The operator refuses, at start and naming the flag, an OVN database
// endpoint it cannot dial, an ssl: endpoint without its files, the files of
// an endpoint that is not ssl:, and a file it cannot read or parse (naming
// the file).
func TestOperatorRefusesBadOVNFlags(t *testing.T) {
	dir := t.TempDir()
	good := clientFiles(t, dir)
	other := clientFiles(t, t.TempDir())
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := func(db string, f ovs.TLS) []string {
		return []string{"--ovn-" + db + "-client-privkey", f.Key, "--ovn-" + db + "-client-cert", f.Cert, "--ovn-" + db + "-client-cacert", f.CA}
	}
	with := func(f ovs.TLS, change func(*ovs.TLS)) ovs.TLS {
		change(&f)
		return f
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"endpoint of another kind", []string{"--ovn-nb", "http://10.0.0.1:6641"}, `--ovn-nb: "http://10.0.0.1:6641" is not unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT`},
		{"endpoint without a port", []string{"--ovn-sb", "ssl:10.0.0.1"}, `--ovn-sb: "ssl:10.0.0.1" is not unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT`},
		{"list of endpoints", []string{"--ovn-nb", "ssl:10.0.0.1:6641,ssl:10.0.0.2:6641"}, "is a list: give one endpoint"},
		{"ssl: without files", []string{"--ovn-sb", "ssl:10.0.0.1:6642"},
			"--ovn-sb: ssl:10.0.0.1:6642 needs --ovn-sb-client-privkey, --ovn-sb-client-cert and --ovn-sb-client-cacert (missing: --ovn-sb-client-privkey, --ovn-sb-client-cert, --ovn-sb-client-cacert)"},
		{"ssl: without its CA", append([]string{"--ovn-nb", "ssl:10.0.0.1:6641"}, files("nb", good)[:4]...), "(missing: --ovn-nb-client-cacert)"},
		{"files without an endpoint", []string{"--ovn-nb-client-cert", good.Cert}, "--ovn-nb-client-cert: goes with an ssl: --ovn-nb, which is not set"},
		{"files for a tcp: endpoint", append([]string{"--ovn-sb", "tcp:10.0.0.1:6642"}, files("sb", good)...),
			"--ovn-sb-client-privkey: goes with an ssl: --ovn-sb, not tcp:10.0.0.1:6642"},
		{"the other database's files", append([]string{"--ovn-nb", "ssl:10.0.0.1:6641"}, files("sb", good)...),
			"--ovn-nb: ssl:10.0.0.1:6641 needs"},
		{"a name for a unix: endpoint", []string{"--ovn-nb", "unix:/run/ovn/ovnnb_db.sock", "--ovn-nb-cert-common-name", "ovnnb"},
			"--ovn-nb-cert-common-name: goes with an ssl: --ovn-nb, not unix:/run/ovn/ovnnb_db.sock"},
		{"unreadable certificate", append([]string{"--ovn-nb", "ssl:10.0.0.1:6641"}, files("nb", with(good, func(f *ovs.TLS) { f.Cert = "/nonexistent/tls.crt" }))...),
			"--ovn-nb-client-cert, --ovn-nb-client-privkey: client certificate /nonexistent/tls.crt with key " + good.Key + ": open /nonexistent/tls.crt: no such file or directory"},
		{"unparsable certificate", append([]string{"--ovn-sb", "ssl:10.0.0.1:6642"}, files("sb", with(good, func(f *ovs.TLS) { f.Cert = garbage }))...),
			"--ovn-sb-client-cert, --ovn-sb-client-privkey: client certificate " + garbage + " with key " + good.Key + ": tls: failed to find any PEM data in certificate input"},
		{"key of another certificate", append([]string{"--ovn-nb", "ssl:10.0.0.1:6641"}, files("nb", with(good, func(f *ovs.TLS) { f.Key = other.Key }))...),
			"private key does not match public key"},
		{"unreadable CA", append([]string{"--ovn-sb", "ssl:10.0.0.1:6642"}, files("sb", with(good, func(f *ovs.TLS) { f.CA = "/nonexistent/ca.crt" }))...),
			"--ovn-sb-client-cacert: CA certificates: open /nonexistent/ca.crt: no such file or directory"},
		{"unparsable CA", append([]string{"--ovn-nb", "ssl:10.0.0.1:6641"}, files("nb", with(good, func(f *ovs.TLS) { f.CA = garbage }))...),
			"--ovn-nb-client-cacert: CA certificates " + garbage + ": no PEM certificate in it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runBin(t, append([]string{"operator"}, c.args...)...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("netshift operator %s: err %v, output %q; want an error saying %q", strings.Join(c.args, " "), err, out, c.want)
			}
		})
	}
}

// Good flags pass: an ssl: endpoint with readable files (the name asked for
// kept), a tcp: and a unix: endpoint without any, and no endpoint at all.
func TestOVNFlagsAccepted(t *testing.T) {
	good := clientFiles(t, t.TempDir())
	named := good
	named.ServerName = "ovnnb"
	for _, c := range []struct {
		flags ovnDBFlags
		tls   *ovs.TLS
	}{
		{ovnDBFlags{flag: "ovn-nb", endpoint: "ssl:10.0.0.1:6641", tls: named}, &named},
		{ovnDBFlags{flag: "ovn-sb", endpoint: "ssl:[fd00::1]:6642", tls: good}, &good},
		{ovnDBFlags{flag: "ovn-sb", endpoint: "tcp:ovnkube-db.ovn-kubernetes.svc:6642"}, nil},
		{ovnDBFlags{flag: "ovn-nb", endpoint: "unix:/var/run/ovn/ovnnb_db.sock"}, nil},
		{ovnDBFlags{flag: "ovn-nb"}, nil},
	} {
		endpoint, tls, err := c.flags.options()
		if err != nil || endpoint != c.flags.endpoint || (tls == nil) != (c.tls == nil) || tls != nil && *tls != *c.tls {
			t.Errorf("--%s %q: %q %+v %v; want it as given, with %+v", c.flags.flag, c.flags.endpoint, endpoint, tls, err, c.tls)
		}
	}
}
