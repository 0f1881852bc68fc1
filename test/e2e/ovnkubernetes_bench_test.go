package e2e

import (
	"fmt"
	"os"
	"testing"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/ovs"
)

// BenchmarkOVNKubernetes measures the real OVN-Kubernetes (the binaries
// NETSHIFT_OVN_KUBERNETES names) on three nodes in single zone: MTU −100 and
// +100, and the Geneve port 6081 → 6090 → 6081, each under the probe through
// the restart of ovnkube's pods that follows it (longest gap, requests
// failed); then `lab zone-bench`: every node into a zone of its own and back
// through ovnkube's own objects, the probe around each move (the moving
// node's connections' longest gap, the others'). It is skipped, saying why,
// without the binaries (CI cannot have them); with -short, only the MTU −100.
func BenchmarkOVNKubernetes(b *testing.B) {
	dir := os.Getenv("NETSHIFT_OVN_KUBERNETES")
	if dir == "" {
		b.Skip("skipped: NETSHIFT_OVN_KUBERNETES names no directory with OVN-Kubernetes' binaries (see docs/lab.md)")
	}
	name := "ovkb"
	benchLab(b, name, "--ovn-kubernetes", dir, "--zones", "single")
	s, err := lab.LoadState(name)
	if err != nil {
		b.Fatal(err)
	}
	c := labClient(b, name)
	mtu := s.Options.MTU
	changes := []struct {
		metric    string
		patch     string
		mtu, port int
	}{
		{"mtu-down", fmt.Sprintf(`{"spec":{"mtu":%d}}`, mtu-100), mtu - 100, 0},
		{"mtu-up", fmt.Sprintf(`{"spec":{"mtu":%d}}`, mtu), mtu, 0},
		{"port", fmt.Sprintf(`{"spec":{"genevePort":%d}}`, ovnKubernetesGenevePort), mtu, ovnKubernetesGenevePort},
		{"port-back", fmt.Sprintf(`{"spec":{"genevePort":%d}}`, ovs.DefaultGenevePort), mtu, ovs.DefaultGenevePort},
	}
	if testing.Short() {
		changes = changes[:1]
	}
	for b.Loop() {
		for _, ch := range changes {
			cn, r := ovnKubernetesChange(b, name, c, ch.patch, func() { waitOVNKubernetesRolled(b, c, ch.mtu, ch.port) })
			if cn.Status.Change.Phase != v1alpha1.PhaseSucceeded {
				b.Fatalf("%s: change %+v", ch.patch, cn.Status.Change)
			}
			b.ReportMetric(maxGap(r), ch.metric+"-gap-ms")
			b.ReportMetric(float64(r.ShortLived.Failures+r.HTTPS.Failures), ch.metric+"-failed")
		}
		if testing.Short() {
			continue
		}
		rep := zoneBench(b, "lab", "zone-bench", "--name", name, "-o", "json")
		b.ReportMetric(rep.MaxMovingGapMs, "moving-maxgap-ms")
		b.ReportMetric(rep.MaxOthersGapMs, "others-maxgap-ms")
		b.ReportMetric(float64(rep.Broken), "zone-broken")
		b.ReportMetric(float64(rep.Failures), "zone-failed-requests")
		if rep.Broken > 0 {
			b.Fatalf("%d long-lived connections broke during the zone moves (every connection must stay alive)", rep.Broken)
		}
	}
	noDaemonDied(b, name)
}
