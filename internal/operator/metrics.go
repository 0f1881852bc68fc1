package operator

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/apicount"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/rollout"
)

// DrainMetrics are the drain controller's Prometheus metrics.
type DrainMetrics struct {
	NodesDraining    *prometheus.GaugeVec
	DrainDuration    *prometheus.HistogramVec
	EvictionsBlocked *prometheus.CounterVec
	// Passes counts completed passes: a test that checks nothing happened
	// waits for passes after its event instead of sleeping.
	Passes prometheus.Counter
}

// NewDrainMetrics creates the metrics and registers them with reg (the
// controller-runtime metrics registry in the operator).
func NewDrainMetrics(reg prometheus.Registerer) *DrainMetrics {
	m := &DrainMetrics{
		NodesDraining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "netshift_drain_nodes_draining",
			Help: "Nodes holding a slot of their pool (a drain, draining, drained or configuring without a drain; or a zone move), per pool.",
		}, []string{"pool"}),
		DrainDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "netshift_drain_duration_seconds",
			Help:    "Time from a node being granted a slot to the slot being released, per pool.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"pool"}),
		EvictionsBlocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netshift_drain_evictions_blocked_total",
			Help: "Evictions refused by a PodDisruptionBudget (each retry counts), per pool.",
		}, []string{"pool"}),
		Passes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "netshift_drain_passes_total",
			Help: "Drain controller passes completed: each read the cluster, decided every node and wrote the decisions.",
		}),
	}
	reg.MustRegister(m.NodesDraining, m.DrainDuration, m.EvictionsBlocked, m.Passes)
	return m
}

func (m *DrainMetrics) observePass(mem rollout.Membership, states map[string]*v1alpha1.NetshiftNodeState) {
	counts := map[string]float64{}
	for pool := range mem.Members {
		counts[pool] = 0
	}
	for name, st := range states {
		if pool, ok := mem.Owner[name]; ok && hold.Busy(st.Status) {
			counts[pool]++
		}
	}
	for pool, c := range counts {
		m.NodesDraining.WithLabelValues(pool).Set(c)
	}
	m.Passes.Inc()
}

// countRequests counts the operator's API requests in the metric
// netshift_operator_api_requests_total, by verb and resource: what the
// operator costs the API server, which a cluster of thousands of nodes must
// be able to afford.
func countRequests(cfg *rest.Config, reg prometheus.Registerer) *rest.Config {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "netshift_operator_api_requests_total",
		Help: "API requests the operator made, by verb (get, list, watch, create, update, patch, delete) and resource (a subresource as resource/subresource).",
	}, []string{"verb", "resource"})
	if err := reg.Register(requests); err != nil {
		return cfg // another operator of this process (tests) registered it first
	}
	c := apicount.New()
	c.Observe = func(k apicount.Key) { requests.WithLabelValues(k.Verb, k.Resource).Inc() }
	cfg = rest.CopyConfig(cfg)
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return c.Wrap(rt)
	}
	return cfg
}
