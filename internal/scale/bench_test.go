package scale

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/testenv"
)

// netshiftBinary is the netshift binary whose operator command the simulated clusters run.
var netshiftBinary string

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // the operator and the agents log to files of their own
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark to run: no binary to build
	}
	code := func() int {
		dir, err := os.MkdirTemp("", "netshift-scale-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if netshiftBinary, err = testenv.BuildNetshift(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// simulate runs one scenario, skipping when the control plane or kwok is not built.
func simulate(b *testing.B, o Options) *Report {
	b.Helper()
	if _, err := controlplane.AssetsDir(); err != nil {
		testenv.Require(b, err)
	}
	if _, err := KwokBinary(); err != nil {
		testenv.Require(b, err)
	}
	o.Netshift = netshiftBinary
	o.Out = testWriter{b}
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Minute
	}
	r, err := Run(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	if p := r.Problem(); p != "" {
		b.Fatal(p)
	}
	return r
}

// testWriter logs the run's progress through the benchmark.
type testWriter struct{ b *testing.B }

func (w testWriter) Write(p []byte) (int, error) {
	w.b.Log(string(p[:len(p)-min(1, len(p))]))
	return len(p), nil
}

// sizes are the simulated clusters' sizes; -short (CI's smoke) runs the smallest.
func sizes(b *testing.B, all ...int) []int {
	if testing.Short() {
		return all[:1]
	}
	return all
}

// BenchmarkScaleLiveChange runs a live MTU change and a VXLAN port change on
// clusters of simulated nodes, and reports the time from the spec patch to
// the change's end, the T0 lead, API requests per node and what the operator,
// the API server and etcd spent.
func BenchmarkScaleLiveChange(b *testing.B) {
	for _, run := range []string{RunMTU, RunPort} {
		for _, n := range sizes(b, 100, 500, 1000, 5000) {
			if run == RunPort && n == 500 {
				continue
			}
			b.Run(fmt.Sprintf("%s/nodes=%d", run, n), func(b *testing.B) {
				for b.Loop() {
					reportChange(b, simulate(b, Options{Nodes: n, Run: run}))
				}
			})
		}
	}
}

// BenchmarkScaleFaults runs a live MTU change with 1 % of the nodes failing
// their first step and 1 % going silent once they answered their preconditions.
func BenchmarkScaleFaults(b *testing.B) {
	for _, n := range sizes(b, 100, 1000, 5000) {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				r := simulate(b, Options{Nodes: n, Run: RunMTU, FailPercent: 1, SilentPercent: 1})
				c := r.Change
				reportChange(b, r)
				others := c.Nodes - len(c.Failed) - len(c.Silent)
				b.ReportMetric(float64(len(c.Failed)), "failing-nodes")
				b.ReportMetric(float64(len(c.Failed)-c.Restored), "failing-not-restored")
				b.ReportMetric(float64(len(c.Failed)-c.Reported), "failing-not-reported")
				b.ReportMetric(float64(len(c.Silent)), "silent-nodes")
				b.ReportMetric(float64(max(others-c.Applied, 0)), "others-not-applied")
			}
		})
	}
}

// BenchmarkScaleDrain drains every node of a cluster of simulated nodes under
// 10 pools of mixed priorities, maxParallel 10 %, 10 pods a node (one in ten
// under a PodDisruptionBudget), checking each pool's limit from the Nodes' watch.
func BenchmarkScaleDrain(b *testing.B) {
	for _, n := range sizes(b, 100, 1000) {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				r := simulate(b, Options{Nodes: n, Run: RunDrain, PodsPerNode: 10, Pools: 10, WorkTime: time.Second}).Drain
				b.ReportMetric(r.Seconds, "drain-s")
				b.ReportMetric(float64(r.IdealWaves), "ideal-waves")
				b.ReportMetric(float64(r.Waves), "waves")
				b.ReportMetric(r.TimedWaves, "timed-waves")
				b.ReportMetric(r.NodeSeconds, "node-cordoned-s")
				b.ReportMetric(r.SecondsPerWave, "s/ideal-wave")
				b.ReportMetric(float64(len(r.OverLimit)), "over-limit")
				reportCost(b, r.Cost)
			}
		})
	}
}

func reportChange(b *testing.B, r *Report) {
	c := r.Change
	b.ReportMetric(c.TotalSeconds, "patch-to-end-s")
	b.ReportMetric(c.PreconditionsSeconds, "preconditions-s")
	b.ReportMetric(c.LeadSeconds, "lead-s")
	b.ReportMetric(c.T0ToEndSeconds, "t0-to-end-s")
	b.ReportMetric(c.StepLateMs[1], "step-late-p99-ms")
	b.ReportMetric(r.SetUpSeconds, "setup-s")
	reportCost(b, c.Cost)
}

func reportCost(b *testing.B, c Cost) {
	b.ReportMetric(c.WritesPerNode, "writes/node")
	for who, verbs := range c.Requests {
		writes, reads := 0.0, 0.0
		for verb, n := range verbs {
			switch verb {
			case "get", "list", "watch":
				reads += n
			default:
				writes += n
			}
		}
		b.ReportMetric(writes, who+"-writes/node")
		b.ReportMetric(reads, who+"-reads/node")
	}
	if c.APIServerWritesPerSecond > 0 {
		b.ReportMetric(c.APIServerWritesPerSecond, "apiserver-writes/s")
		b.ReportMetric(c.APIServerTooMany, "apiserver-429-writes/node")
		for resource, metric := range map[string]string{"leases": "lease", "netshiftnodestates": "nodestate", "nodes": "node"} {
			b.ReportMetric(c.APIServerWrites[resource], metric+"-writes/node")
		}
	}
	for name, metric := range map[string]string{"operator": "operator", "kube-apiserver": "apiserver", "etcd": "etcd", "agents (this process)": "agents",
		"kwok": "kwok", "kube-controller-manager": "kcm", "kube-scheduler": "scheduler"} {
		if u := c.Usage[name]; u != nil {
			b.ReportMetric(u.CPUSeconds, metric+"-cpu-s")
			b.ReportMetric(u.PeakRSSMiB, metric+"-peak-MiB")
		}
	}
}
