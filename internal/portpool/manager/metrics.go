package manager

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

type metrics struct {
	ports           *prometheus.GaugeVec
	acquire         *prometheus.CounterVec
	acquireSeconds  prometheus.Histogram
	decisionSeconds prometheus.Histogram
	createSeconds   prometheus.Histogram
	neutronCalls    *prometheus.GaugeVec
	neutronErrors   prometheus.Counter
	released        prometheus.Counter
	recycled        prometheus.Counter
	expired         prometheus.Counter
	deleted         prometheus.Counter
}

var (
	metricsOnce sync.Once
	shared      *metrics
)

// newMetrics registers the port pool metrics once per process (with
// controller-runtime's registry, served on the operator's /metrics).
func newMetrics() *metrics {
	metricsOnce.Do(func() {
		fast := []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
		shared = &metrics{
			ports: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "netshift_portpool_ports",
				Help: "Ports per pool and state (ready, in_use, recycling, creating)."}, []string{"pool", "state"}),
			acquire: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "netshift_portpool_acquire_total",
				Help: "Port requests by result: hit (a pooled port), miss (pool empty), not-ready (recovering)."}, []string{"result"}),
			acquireSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "netshift_portpool_acquire_seconds",
				Help: "Time from a pod's request to its port being usable (ownership recorded, bookkeeping done if synchronous).", Buckets: fast}),
			decisionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "netshift_portpool_decision_seconds",
				Help: "Time to pick the pooled port, alone.", Buckets: fast}),
			createSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "netshift_portpool_bulk_create_seconds",
				Help: "Duration of a bulk port create in Neutron.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 10)}),
			neutronCalls: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "netshift_neutron_requests",
				Help: "Neutron HTTP requests made since start, by kind (create ports, update ports, list ports, delete ports...)."}, []string{"kind"}),
			neutronErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_portpool_neutron_errors_total", Help: "Failed bulk creates."}),
			released:      prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_portpool_released_total", Help: "Ports released by their pods."}),
			recycled:      prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_portpool_recycled_total", Help: "Released ports reset and returned to their pool."}),
			expired:       prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_portpool_expired_total", Help: "Idle ports deleted above the minimum."}),
			deleted:       prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_portpool_deleted_total", Help: "Ports deleted in Neutron."}),
		}
		ctrlmetrics.Registry.MustRegister(shared.ports, shared.acquire, shared.acquireSeconds, shared.decisionSeconds, shared.createSeconds,
			shared.neutronCalls, shared.neutronErrors, shared.released, shared.recycled, shared.expired, shared.deleted)
	})
	return shared
}

// updateGauges publishes the pool sizes and the Neutron request counts.
func (m *Manager) updateGauges() {
	m.mu.Lock()
	for k, p := range m.pools {
		c := p.Counts()
		pool := k.String()
		m.metrics.ports.WithLabelValues(pool, "ready").Set(float64(c.Ready))
		m.metrics.ports.WithLabelValues(pool, "in_use").Set(float64(c.InUse))
		m.metrics.ports.WithLabelValues(pool, "recycling").Set(float64(c.Recycling))
		m.metrics.ports.WithLabelValues(pool, "creating").Set(float64(c.Creating))
	}
	m.mu.Unlock()
	for kind, n := range m.neutron.Calls().Snapshot() {
		m.metrics.neutronCalls.WithLabelValues(kind).Set(float64(n))
	}
}
