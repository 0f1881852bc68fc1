package rollout

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
)

// benchCluster is n nodes spread over 50 label-selected pools with mixed
// limits, a third of the nodes asking for a drain and a tenth holding a slot.
func benchCluster(b *testing.B, n int) (nodes []Node, pools []Pool, drains []NodeDrain) {
	const nPools = 50
	for i := range nPools {
		var mp intstr.IntOrString
		if i%2 == 0 {
			mp = intstr.FromString("10%")
		} else {
			mp = intstr.FromInt32(int32(1 + i%5))
		}
		pools = append(pools, pool(b, fmt.Sprintf("pool-%02d", i), int32(i%10), mp, labelIn("rack", fmt.Sprint(i))))
	}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, Node{Name: name, Labels: map[string]string{"rack": fmt.Sprint(i % nPools), "zone": "z1"}})
		st := v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainIdle}
		switch {
		case i%10 == 0:
			st = v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.Draining, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}
		case i%3 == 0:
			st = v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainRequired, DrainOperation: "op", DrainRequest: req("op", v1alpha1.DrainRequestRequired)}
		}
		drains = append(drains, NodeDrain{Name: name, Status: st, PodsLeft: i % 2})
	}
	return nodes, pools, drains
}

// BenchmarkFullDecision is one complete drain-controller decision: resolve
// pool membership for every node, then decide every node's next action and
// the admissions. Target: under 20 ms for 5,000 nodes in 50 pools.
func BenchmarkFullDecision(b *testing.B) {
	for _, n := range []int{500, 1000, 2000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d/pools=50", n), func(b *testing.B) {
			nodes, pools, drains := benchCluster(b, n)
			b.ReportAllocs()
			for b.Loop() {
				m := Resolve(nodes, pools)
				DecideDrains(m, drains, DefaultDrainPolicy, t0)
			}
		})
	}
}
