package probe

import (
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
)

func TestRingPairsEveryPodWithTheNextNode(t *testing.T) {
	var pods []Pod
	for n := 1; n <= 3; n++ {
		for j := 1; j <= 2; j++ {
			pods = append(pods, Pod{Name: fmt.Sprintf("p%d%d", n, j), Node: fmt.Sprintf("n%d", n)})
		}
	}
	pairs := ring(pods)
	if len(pairs) != 6 {
		t.Fatalf("%d pairs, want 6", len(pairs))
	}
	for _, p := range pairs {
		if p[0].Node == p[1].Node {
			t.Errorf("pair %s -> %s stays on one node", p[0].Name, p[1].Name)
		}
	}
	if ring(pods[:2]) != nil {
		t.Error("pods on one node: no pair can cross nodes")
	}
}

func TestReportFailed(t *testing.T) {
	ok := Report{LongLived: []LongLived{{From: "a", To: "b", Alive: true}}, ShortLived: Counter{Attempts: 10}}
	if f := ok.Failed(); len(f) != 0 {
		t.Fatalf("healthy report fails: %v", f)
	}
	bad := ok
	bad.LongLived = []LongLived{{From: "a", To: "b", Error: "read: reset"}}
	bad.HTTPS.Failures, bad.HTTPS.Attempts, bad.HTTPS.TLSFailures = 1, 5, 1
	f := strings.Join(bad.Failed(), "; ")
	if !strings.Contains(f, "a -> b died") || !strings.Contains(f, "1 of 5 HTTPS") {
		t.Fatalf("failures = %s", f)
	}
}

func TestLargeCertificateNeedsFullSizeSegments(t *testing.T) {
	cert, err := largeCertificate()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cert.Certificate[0]); n <= 16384 {
		t.Fatalf("certificate is %d bytes, want well over one 16 KB TLS record", n)
	}
	if _, err := x509.ParseCertificate(cert.Certificate[0]); err != nil {
		t.Fatal(err)
	}
}
