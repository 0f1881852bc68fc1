package simnode

import (
	"math"
	"math/rand/v2"
	"time"
)

// Latency is how long one kind of operation takes: log-normal, from its
// median and its 99th percentile (a distribution, not a constant: a few
// nodes of thousands are always slow).
type Latency struct {
	Median, P99 time.Duration
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.326

// Sample draws one duration.
func (l Latency) Sample(r *rand.Rand) time.Duration {
	if l.Median <= 0 {
		return 0
	}
	sigma := 0.0
	if l.P99 > l.Median {
		sigma = math.Log(float64(l.P99)/float64(l.Median)) / z99
	}
	return time.Duration(float64(l.Median) * math.Exp(sigma*r.NormFloat64()))
}

// Timings are the simulated node's operations.
type Timings struct {
	// Interface is one interface's MTU set through netlink (a pod's eth0, a node end, a node port).
	Interface Latency
	// TunnelPort is the tunnel port's OVSDB transaction, from its send to its commit.
	TunnelPort Latency
	// ConfigWrite is the network configuration file's rewrite.
	ConfigWrite Latency
}

// LabTimings are what the lab measured on its real nodes (docs/figures.md):
// an agent set a new MTU on 100 pods in 5.85 ms (about 60 µs an interface);
// the tunnel port step took 2.8 ms from its time to its commit on 3 nodes and
// 19 ms on the slowest of 10 busy ones.
var LabTimings = Timings{
	Interface:   Latency{Median: 60 * time.Microsecond, P99: 300 * time.Microsecond},
	TunnelPort:  Latency{Median: 2800 * time.Microsecond, P99: 19 * time.Millisecond},
	ConfigWrite: Latency{Median: 200 * time.Microsecond, P99: 2 * time.Millisecond},
}
