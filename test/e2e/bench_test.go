package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"netshift.io/netshift/internal/testenv"
)

// BenchmarkLabUpDown times `lab up` and `lab down` of a plain VXLAN lab with
// 2 pods per node, and the resident memory of everything the lab runs (OVS
// daemons, the control plane, every node's containerd, kubelet, kube-proxy and
// pods, the operator and the agents).
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

// BenchmarkLiveChangeGap runs, in a plain VXLAN lab with the probe running,
// an MTU decrease by 100, the increase back, and a VXLAN port change, and
// reports each change's longest silence on any long-lived connection, the
// worst over the rounds (target: under 100 ms at 3 nodes). A change that breaks a connection or fails any
// probe request fails the benchmark.
func BenchmarkLiveChangeGap(b *testing.B) {
	for _, nodes := range []int{3, 10} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			testenv.Require(b, missing)
			name := fmt.Sprintf("gap%d", nodes)
			if out, err := runNetshift("lab", "up", "--name", name, "--nodes", fmt.Sprint(nodes)); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			defer func() { _, _ = runNetshift("lab", "down", "--name", name) }()
			c, err := labClientFor(name)
			if err != nil {
				b.Fatal(err)
			}
			gaps := map[string]float64{}
			for i := 0; i < b.N; i++ {
				changes := []struct{ metric, patch string }{
					{"mtu-down-gap-ms", `{"spec":{"mtu":1350}}`},
					{"mtu-up-gap-ms", `{"spec":{"mtu":1450}}`},
					// Alternate, so every round is a real change.
					{"port-gap-ms", fmt.Sprintf(`{"spec":{"vxlanPort":%d}}`, 4790-i%2)},
				}
				for _, ch := range changes {
					r, err := changeUnderProbe(name, c, ch.patch)
					if err != nil {
						b.Fatal(err)
					}
					if !r.OK {
						b.Fatalf("%s: %v", ch.patch, r.Failed())
					}
					gaps[ch.metric] = max(gaps[ch.metric], maxGap(r))
				}
			}
			for m, g := range gaps {
				b.ReportMetric(g, m)
			}
		})
	}
}

// BenchmarkPodCreateToReady measures, on a 3-node lab of real nodes, the
// time from a pod's creation through the API to the first time it is seen
// Ready (scheduler, kubelet, containerd, the CNI chain with netshift-cni):
// 10 pods one after another (one-p50/p99-ms), then 30 at once (burst-).
func BenchmarkPodCreateToReady(b *testing.B) {
	testenv.Require(b, missing)
	const name = "podready"
	if out, err := runNetshift("lab", "up", "--name", name, "--pods-per-node", "1"); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	defer func() { _, _ = runNetshift("lab", "down", "--name", name) }()
	c, err := labClientFor(name)
	if err != nil {
		b.Fatal(err)
	}
	var one, burst []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < 10; j++ {
			took, err := createPodsUntilReady(c, fmt.Sprintf("one%d-%d", i, j), 1)
			if err != nil {
				b.Fatal(err)
			}
			one = append(one, took...)
		}
		took, err := createPodsUntilReady(c, fmt.Sprintf("burst%d", i), 30)
		if err != nil {
			b.Fatal(err)
		}
		burst = append(burst, took...)
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"one", one}, {"burst", burst}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Milliseconds()), m.name+"-p50-ms")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Milliseconds()), m.name+"-p99-ms")
	}
}
