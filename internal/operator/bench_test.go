package operator_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"netshift.io/netshift/api/v1alpha1"
)

// writeCounter counts the API requests that change something.
type writeCounter struct {
	next   http.RoundTripper
	writes *atomic.Int64
}

func (w writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		w.writes.Add(1)
	}
	return w.next.RoundTrip(r)
}

func counting(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writeCounter{next: rt, writes: n} }
	return cfg
}

// BenchmarkDrainCycle200 runs a full drain cycle of 200 nodes, each with one
// pod, through the real API server: 4 pools of 50 nodes with maxParallel 20%
// (10 at once), so the ideal is 5 waves. Agents finish at once. It reports
// the time of a cycle, the time per wave, and the API writes per node of the
// operator and of the agents.
func BenchmarkDrainCycle200(b *testing.B) {
	const nodes, pools = 200, 4
	cl := newCluster(b)
	cl.gate.openAll()
	var opWrites, agentWrites atomic.Int64
	cl.startOperatorWith(counting(env.OperatorConfig(), &opWrites))
	var all []string
	for p := range pools {
		members := names(fmt.Sprintf("p%d-n", p), nodes/pools)
		all = append(all, members...)
		cl.createNodes(members...)
		cl.createPool(fmt.Sprintf("pool%d", p), 1, intstr.FromString("20%"), members...)
	}
	cl.startAgentsWith(func(n string) *rest.Config { return counting(env.AgentConfig(n), &agentWrites) }, all...)
	waves := len(cl.planWaves(all...))
	// Count from a settled cluster: every node's NetshiftNodeState made and every pool's status written.
	cl.eventually(time.Minute, "every NetshiftNodeState and pool status", func() bool {
		var nns v1alpha1.NetshiftNodeStateList
		var nps v1alpha1.NetshiftNodePoolList
		if cl.c.List(cl.ctx, &nns) != nil || cl.c.List(cl.ctx, &nps) != nil || len(nns.Items) != nodes {
			return false
		}
		for _, np := range nps.Items {
			if np.Status.NodeCount != nodes/pools {
				return false
			}
		}
		return true
	})
	var cycles int
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for _, n := range all {
			cl.createPods(n, 1, map[string]string{"app": fmt.Sprintf("cycle%d", i)})
		}
		opWrites.Store(0)
		agentWrites.Store(0)
		start := time.Now()
		b.StartTimer()
		op := fmt.Sprintf("bench-%d", i)
		cl.startOperation(op, all...)
		cl.waitFinished(op, all...)
		elapsed += time.Since(start)
		cycles++
	}
	b.ReportMetric(elapsed.Seconds()/float64(cycles), "s/cycle")
	b.ReportMetric(elapsed.Seconds()/float64(cycles)/float64(waves), "s/wave")
	b.ReportMetric(float64(waves), "ideal-waves")
	b.ReportMetric(float64(opWrites.Load())/float64(nodes), "operator-writes/node")
	b.ReportMetric(float64(agentWrites.Load())/float64(nodes), "agent-writes/node")
}
