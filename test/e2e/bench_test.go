package e2e

import (
	"fmt"
	"testing"
	"time"

	"netshift.io/netshift/internal/testenv"
)

// BenchmarkLabUpDown times `lab up` and `lab down` of a plain VXLAN lab with
// 2 pods per node, and the resident memory of everything the lab runs (OVS
// daemons, the API server and etcd, the operator and the agents).
func BenchmarkLabUpDown(b *testing.B) {
	for _, nodes := range []int{3, 10} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			testenv.Require(b, missing)
			var up, down time.Duration
			var mem float64
			n := 0
			for b.Loop() {
				name := fmt.Sprintf("bench%d", nodes)
				start := time.Now()
				if out, err := runNetshift("lab", "up", "--name", name, "--nodes", fmt.Sprint(nodes)); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				up += time.Since(start)
				st, err := labStatus(name)
				if err != nil {
					b.Fatal(err)
				}
				mem += st.MemoryMiB
				start = time.Now()
				if out, err := runNetshift("lab", "down", "--name", name); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				down += time.Since(start)
				n++
			}
			b.ReportMetric(up.Seconds()/float64(n), "up-s")
			b.ReportMetric(down.Seconds()/float64(n), "down-s")
			b.ReportMetric(mem/float64(n), "MiB")
		})
	}
}
