package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter reads a counter without labels from a registry (0 before its first
// increment): tests wait on a controller's pass counter, not on time.
func Counter(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
