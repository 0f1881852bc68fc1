package poolbench

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"netshift.io/netshift/internal/neutron/neutrontest"
	"netshift.io/netshift/internal/testenv"
)

// BenchmarkPortPools is `netshift portpool bench --pods 100 -o json` against a
// real neutron-server started here and a real API server: the figures of the
// port pool acceptance, side by side in one run. With -short (the CI's
// smoke), 10 pods.
func BenchmarkPortPools(b *testing.B) {
	pods := 100
	if testing.Short() {
		pods = 10
	}
	if _, err := os.Stat("/usr/bin/neutron-server"); err != nil {
		testenv.Require(b, &testenv.Missing{Reason: "neutron-server is not installed"})
	}
	srv, err := neutrontest.Start(context.Background(), b.TempDir())
	testenv.Require(b, err)
	defer srv.Stop()
	for i := 0; i < b.N; i++ {
		r, err := Run(context.Background(), Options{NeutronURL: srv.URL, Pods: pods, Progress: os.Stderr})
		testenv.Require(b, err)
		WriteText(os.Stdout, r)
		out, _ := json.Marshal(r)
		b.Logf("%s", out)
		b.ReportMetric(r.PooledDeferred.P99Ms, "deferred-p99-ms")
		b.ReportMetric(r.PooledSync.P99Ms, "sync-p99-ms")
		b.ReportMetric(r.Unpooled.P99Ms, "unpooled-p99-ms")
		b.ReportMetric(r.Decision.P99Ms*1000, "decision-p99-µs")
		b.ReportMetric(r.NeutronCallsPerPod, "neutron-requests/pod")
	}
}
