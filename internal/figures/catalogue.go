package figures

import (
	"fmt"

	"netshift.io/netshift/internal/livechange"
)

// A Job is one command of hack/bench.sh: a benchmark at its full size, run
// from the repository's root.
type Job struct {
	Name string
	Cmd  string
}

// Jobs are every benchmark at full size, in the order hack/bench.sh runs them:
// the cheap ones first, so a broken machine shows before an hour is spent.
// The CI's bench smoke runs the same benchmarks with -short -benchtime 1x.
var Jobs = []Job{
	{"decision", "go test -run '^$' -bench FullDecision -benchtime 200x -count 5 ./internal/rollout/"},
	{"setmtu", "go test -run '^$' -bench SetMTU100Pods -benchtime 20x -count 5 ./internal/netdev/"},
	{"wiring", "go test -run '^$' -bench PooledPodWiring -benchtime 50x -count 5 ./internal/cni/"},
	{"drain", "go test -run '^$' -bench DrainCycle200 -benchtime 1x -timeout 10m ./internal/operator/"},
	{"portpools", "go test -run '^$' -bench PortPools -benchtime 1x -timeout 25m -v ./internal/portpool/poolbench/"},
	{"lab", "go test -run '^$' -bench LabUpDown -benchtime 3x -timeout 25m ./test/e2e/"},
	{"gap3", "go test -run '^$' -bench 'LiveChangeGap/nodes=3$' -benchtime 1x -count 3 -timeout 60m ./test/e2e/"},
	{"gap10", "go test -run '^$' -bench 'LiveChangeGap/nodes=10$' -benchtime 1x -timeout 30m ./test/e2e/"},
	{"migration", "go test -run '^$' -bench VMMigration -benchtime 1x -timeout 20m ./test/e2e/"},
	{"qemu", "go test -run '^$' -bench QEMUMigration -benchtime 1x -timeout 30m ./test/e2e/"},
	{"zones", "go test -run '^$' -bench ZoneMoves -benchtime 1x -timeout 20m ./test/e2e/"},
	{"ovnk", "go test -run '^$' -bench OVNKubernetes -benchtime 1x -timeout 40m ./test/e2e/"},
	{"podready", "go test -run '^$' -bench PodCreateToReady -benchtime 1x -timeout 15m ./test/e2e/"},
	{"podpools", "go test -run '^$' -bench PooledPodsToReady -benchtime 1x -timeout 40m -v ./test/e2e/"},
	{"scale", "go test -run '^$' -bench 'ScaleLiveChange|ScaleFaults' -benchtime 1x -timeout 120m ./internal/scale/"},
	{"scaledrain", "go test -run '^$' -bench ScaleDrain -benchtime 1x -timeout 60m ./internal/scale/"},
}

// Areas, in the page's order.
const (
	AreaLive      = "Live MTU and tunnel-port changes"
	AreaDrains    = "Drains and node pools"
	AreaPools     = "Neutron port pools and pods"
	AreaMigration = "VM migration"
	AreaZones     = "OVN interconnect zones"
	AreaScale     = "Thousands of nodes (simulated: kwok and in-process agents on a real control plane)"
	AreaLab       = "The lab"
)

// Areas is the page's order of areas.
var Areas = []string{AreaLive, AreaDrains, AreaPools, AreaMigration, AreaZones, AreaScale, AreaLab}

// A Metric names one value a benchmark reports.
type Metric struct {
	Bench string // its name as `go test` prints it, without -GOMAXPROCS
	Unit  string // the unit it reports it under
}

// A Row is one figure of the page.
type Row struct {
	Area string
	What string // what is measured, as the person reading says it
	Job  string // the job whose command measures it
	Of   Metric
	// Per, when set, makes the row the ratio Of / Per (each run's own, when
	// both have as many runs; else of the medians).
	Per *Metric
	// Scale converts the reported unit into Shown (ns/op into ms: 1e-6).
	Scale  float64
	Shown  string
	Target *Target
	// Held says what holds the figure when a run misses its target: the page
	// prints it under the area's table, only then. A {unit} in it is the
	// median of what the row's benchmark (Of's) reported under that unit, so
	// the page says how much of what held it in that run.
	Held string
}

var (
	ns2ms = 1e-6
	gap3  = "BenchmarkLiveChangeGap/nodes=3"
	gap10 = "BenchmarkLiveChangeGap/nodes=10"
	ovnk  = "BenchmarkOVNKubernetes"
)

// heldByOVNKubernetes: what a miss of the real OVN-Kubernetes' figures
// comes from, and when they are not measured.
const heldByOVNKubernetes = "the restart of ovnkube's pods (ovnkube-node, ovn-controller and, in a zone of the node's own, its databases " +
	"and ovnkube-controller) on the lab's userspace datapath, which shares the two cores with every node. These rows are measured only " +
	"when NETSHIFT_OVN_KUBERNETES names OVN-Kubernetes' binaries (see the lab's page)"

// The scale benchmarks' runs.
func mtuAt(nodes int) string    { return fmt.Sprintf("BenchmarkScaleLiveChange/mtu/nodes=%d", nodes) }
func portAt(nodes int) string   { return fmt.Sprintf("BenchmarkScaleLiveChange/port/nodes=%d", nodes) }
func faultsAt(nodes int) string { return fmt.Sprintf("BenchmarkScaleFaults/nodes=%d", nodes) }

func m(bench, unit string) Metric { return Metric{Bench: bench, Unit: unit} }

// heldByAPIServer is what holds a 5,000-node change's time: the API server's
// rate of writes, and the agents' windows, at the operator's default spacing.
var heldByAPIServer = fmt.Sprintf("the API server's rate of writes on the 2 cores, and the agents' windows. The change's own "+
	"writes are 2 a node, in two rounds (each node's precondition answer, then its steps' report), which the agents spread "+
	"over %d ms a node each (the operator's default --agent-write-spacing, %.0f s at 5,000 nodes): the preconditions took "+
	"{preconditions-s} s and T0 to the end {t0-to-end-s} s of the change's {patch-to-end-s} s. With shorter windows each "+
	"round still took about 30 s, what the API server took to serve 5,000 writes among the others' (see [scale](scale.md)). "+
	"Both cores were in use throughout: the API server took {apiserver-cpu-s} CPU-seconds, the simulated agents' process "+
	"{agents-cpu-s}, the operator {operator-cpu-s}, etcd {etcd-cpu-s}, kube-controller-manager {kcm-cpu-s} and kwok "+
	"{kwok-cpu-s}. The API server served {apiserver-writes/s} writes a second from every writer; over the change, per "+
	"node: NetshiftNodeStates {nodestate-writes/node} (the change's own, and what was sent again), leases "+
	"{lease-writes/node} (kwok's renewals) and Nodes {node-writes/node}",
	livechange.DefaultAgentWriteSpacing.Milliseconds(), livechange.ReportSpread(5000, livechange.DefaultAgentWriteSpacing).Seconds())

// What holds the other scale targets, where a run misses them.
const (
	heldByGrowth = "the rate at which the API server serves writes falls as the cluster grows (the rows of writes it served a second, " +
		"below: fewer at 5,000 nodes than at 500, on the same 2 cores), and each of the operator's passes reads every node"
	heldByRetries = "the change's own writes are 2 a node (the agent's precondition answer and its steps' report; the plan, T0 " +
		"and the plan's removal are 3 writes for the whole cluster); what is over that was sent again: after a conflict with " +
		"another writer of the same object, or by client-go after the API server answered 429 to a write its queue held too " +
		"long. At 5,000 nodes the operator wrote {operator-writes/node} a node and the agents {agents-writes/node}, and the " +
		"API server answered {apiserver-429-writes/node} a node 429, each sent again"
	heldBySlowNodes = "nodes' cordoned times vary (a node's evictions wait for its pods' budgets and for the API server), so the busiest " +
		"pool's last nodes end after the median; and a slot freed waits for the drain controller's next pass, which reads every node " +
		"and state past the cache"
)

// Rows are every figure, with the target it is judged against where one is
// set. A metric a benchmark reports but no row names goes into the JSON's
// otherMetrics, so nothing measured is hidden. What must never happen (a
// connection broken by a live change, a per-port datagram lost, a zone move
// breaking a connection) fails its benchmark's run: such a run reports no
// figure, and its job is named on the page as failed.
var Rows = []Row{
	// Live changes, 3 real nodes, the probe running.
	{Area: AreaLive, What: "MTU −100, longest gap of any long-lived connection (3 nodes)", Job: "gap3", Of: m(gap3, "mtu-down-gap-ms"), Shown: "ms", Target: Below(50)},
	{Area: AreaLive, What: "MTU +100, longest gap (3 nodes)", Job: "gap3", Of: m(gap3, "mtu-up-gap-ms"), Shown: "ms", Target: Below(50)},
	{Area: AreaLive, What: "VXLAN port, longest gap (3 nodes)", Job: "gap3", Of: m(gap3, "port-libovsdb-gap-ms"), Shown: "ms", Target: Below(50)},
	{Area: AreaLive, What: "MTU +100, requests failed (3 nodes)", Job: "gap3", Of: m(gap3, "mtu-up-failed"), Target: AtMost(0)},
	{Area: AreaLive, What: "VXLAN port, requests failed (3 nodes)", Job: "gap3", Of: m(gap3, "port-libovsdb-failed"), Target: AtMost(0)},
	{Area: AreaLive, What: "the same window with no change, longest gap (3 nodes): the floor", Job: "gap3", Of: m(gap3, "no-change-gap-ms"), Shown: "ms"},
	{Area: AreaLive, What: "the same windows with no change, requests failed (3 nodes): the floor", Job: "gap3", Of: m(gap3, "no-change-failed")},
	{Area: AreaLive, What: "VXLAN port through ovs-vsctl at T0 (the old path), longest gap (3 nodes)", Job: "gap3", Of: m(gap3, "port-exec-gap-ms"), Shown: "ms"},
	{Area: AreaLive, What: "tunnel port step, from its time to its commit, slowest node (3 nodes)", Job: "gap3", Of: m(gap3, "port-libovsdb-t0-commit-max-ms"), Shown: "ms", Target: Below(5)},
	{Area: AreaLive, What: "tunnel port step, how late it started, p99 (3 nodes)", Job: "gap3", Of: m(gap3, "port-libovsdb-skew-p99-ms"), Shown: "ms"},
	{Area: AreaLive, What: "the machine's longest pause during the changes (3 nodes)", Job: "gap3", Of: m(gap3, "machine-pause-ms"), Shown: "ms"},
	{Area: AreaLive, What: "MTU −100 live: time from the edit to every node done (3 nodes)", Job: "gap3", Of: m(gap3, "live-mtu-s"), Shown: "s"},
	{Area: AreaLive, What: "MTU −100 live: long-lived connections broken", Job: "gap3", Of: m(gap3, "live-mtu-broken")},
	{Area: AreaLive, What: "MTU −100 live: requests failed (short-lived and HTTPS)", Job: "gap3", Of: m(gap3, "live-mtu-failed"), Target: AtMost(0)},
	{Area: AreaLive, What: "MTU −100 by rolling reboots, one node at a time (drain, reboot, uncordon: today's way): total time", Job: "gap3", Of: m(gap3, "reboot-mtu-s"), Shown: "s"},
	{Area: AreaLive, What: "MTU −100 by rolling reboots: long-lived connections broken", Job: "gap3", Of: m(gap3, "reboot-mtu-broken")},
	{Area: AreaLive, What: "MTU −100 by rolling reboots: requests failed (short-lived and HTTPS)", Job: "gap3", Of: m(gap3, "reboot-mtu-failed")},
	{Area: AreaLive, What: "rolling reboots' time over the live change's", Job: "gap3", Of: m(gap3, "reboot-mtu-s"), Per: &Metric{gap3, "live-mtu-s"}, Shown: "×"},
	{Area: AreaLive, What: "MTU −100, longest gap (10 nodes)", Job: "gap10", Of: m(gap10, "mtu-down-gap-ms"), Shown: "ms", Target: Below(100)},
	{Area: AreaLive, What: "MTU +100, longest gap (10 nodes)", Job: "gap10", Of: m(gap10, "mtu-up-gap-ms"), Shown: "ms", Target: Below(100)},
	{Area: AreaLive, What: "VXLAN port, longest gap (10 nodes)", Job: "gap10", Of: m(gap10, "port-libovsdb-gap-ms"), Shown: "ms", Target: Below(100)},
	{Area: AreaLive, What: "MTU −100, requests failed (10 nodes)", Job: "gap10", Of: m(gap10, "mtu-down-failed"), Target: AtMost(0)},
	{Area: AreaLive, What: "MTU +100, requests failed (10 nodes)", Job: "gap10", Of: m(gap10, "mtu-up-failed"), Target: AtMost(0)},
	{Area: AreaLive, What: "VXLAN port, requests failed (10 nodes)", Job: "gap10", Of: m(gap10, "port-libovsdb-failed"), Target: AtMost(0)},
	{Area: AreaLive, What: "the same windows with no change, requests failed (10 nodes): the floor", Job: "gap10", Of: m(gap10, "no-change-failed")},
	{Area: AreaLive, What: "tunnel port step, from its time to its commit, slowest node (10 nodes)", Job: "gap10", Of: m(gap10, "port-libovsdb-t0-commit-max-ms"), Shown: "ms", Target: Below(5)},
	// The real OVN-Kubernetes (the binaries NETSHIFT_OVN_KUBERNETES names), 3 nodes in single zone.
	{Area: AreaLive, What: "OVN-Kubernetes, MTU −100 through the restart of ovnkube's pods, longest gap (3 nodes)", Job: "ovnk", Of: m(ovnk, "mtu-down-gap-ms"), Shown: "ms", Held: heldByOVNKubernetes},
	{Area: AreaLive, What: "OVN-Kubernetes, MTU −100, requests failed (3 nodes)", Job: "ovnk", Of: m(ovnk, "mtu-down-failed"), Target: AtMost(0), Held: heldByOVNKubernetes},
	{Area: AreaLive, What: "OVN-Kubernetes, MTU +100, longest gap (3 nodes)", Job: "ovnk", Of: m(ovnk, "mtu-up-gap-ms"), Shown: "ms"},
	{Area: AreaLive, What: "OVN-Kubernetes, MTU +100, requests failed (3 nodes)", Job: "ovnk", Of: m(ovnk, "mtu-up-failed"), Target: AtMost(0), Held: heldByOVNKubernetes},
	{Area: AreaLive, What: "OVN-Kubernetes, Geneve port 6081 → 6090, longest gap (3 nodes)", Job: "ovnk", Of: m(ovnk, "port-gap-ms"), Shown: "ms"},
	{Area: AreaLive, What: "OVN-Kubernetes, Geneve port 6081 → 6090, requests failed (3 nodes)", Job: "ovnk", Of: m(ovnk, "port-failed"), Target: AtMost(0), Held: heldByOVNKubernetes},
	{Area: AreaLive, What: "OVN-Kubernetes, Geneve port 6090 → 6081, longest gap (3 nodes)", Job: "ovnk", Of: m(ovnk, "port-back-gap-ms"), Shown: "ms"},
	{Area: AreaLive, What: "OVN-Kubernetes, Geneve port 6090 → 6081, requests failed (3 nodes)", Job: "ovnk", Of: m(ovnk, "port-back-failed"), Target: AtMost(0), Held: heldByOVNKubernetes},
	{Area: AreaLive, What: "one agent sets a new MTU on 100 pods", Job: "setmtu", Of: m("BenchmarkSetMTU100Pods", "ms/100-pods"), Shown: "ms", Target: Below(1000)},

	// Drains.
	{Area: AreaDrains, What: "one full drain decision, 5,000 nodes in 50 pools", Job: "decision", Of: m("BenchmarkFullDecision/nodes=5000/pools=50", "ns/op"), Scale: ns2ms, Shown: "ms", Target: Below(20)},
	{Area: AreaDrains, What: "one full drain decision, 500 nodes in 50 pools", Job: "decision", Of: m("BenchmarkFullDecision/nodes=500/pools=50", "ns/op"), Scale: ns2ms, Shown: "ms"},
	{Area: AreaDrains, What: "a drain cycle of 200 nodes (4 pools, maxParallel 20 %) through the API server", Job: "drain", Of: m("BenchmarkDrainCycle200", "s/cycle"), Shown: "s"},
	{Area: AreaDrains, What: "the same, per wave (5 ideal waves)", Job: "drain", Of: m("BenchmarkDrainCycle200", "s/wave"), Shown: "s"},
	{Area: AreaDrains, What: "the operator's API writes per node and cycle", Job: "drain", Of: m("BenchmarkDrainCycle200", "operator-writes/node")},
	{Area: AreaDrains, What: "the agents' API writes per node and cycle", Job: "drain", Of: m("BenchmarkDrainCycle200", "agent-writes/node")},

	// Port pools and pods.
	{Area: AreaPools, What: "the pool's decision, p99", Job: "portpools", Of: m("BenchmarkPortPools", "decision-p99-µs"), Shown: "µs", Target: Below(1000)},
	{Area: AreaPools, What: "a pod's port, warm pool, deferred bookkeeping, p99", Job: "portpools", Of: m("BenchmarkPortPools", "deferred-p99-ms"), Shown: "ms", Target: Below(20)},
	{Area: AreaPools, What: "a pod's port, warm pool, synchronous bookkeeping, p99", Job: "portpools", Of: m("BenchmarkPortPools", "sync-p99-ms"), Shown: "ms"},
	{Area: AreaPools, What: "a pod's port with no pool (a create per pod), p99", Job: "portpools", Of: m("BenchmarkPortPools", "unpooled-p99-ms"), Shown: "ms"},
	{Area: AreaPools, What: "Neutron requests per pod over a churn", Job: "portpools", Of: m("BenchmarkPortPools", "neutron-requests/pod"), Target: AtMost(1)},
	{Area: AreaPools, What: "50 pooled pods at once to Ready (deferred), p50", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "deferred-p50-ms"), Scale: 1e-3, Shown: "s"},
	{Area: AreaPools, What: "50 pooled pods at once to Ready (deferred), p99", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "deferred-p99-ms"), Scale: 1e-3, Shown: "s"},
	{Area: AreaPools, What: "50 pooled pods at once (deferred), p50 over the floor's", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "deferred-over-floor-p50-ms"), Shown: "ms", Target: Below(100)},
	{Area: AreaPools, What: "50 pooled pods at once (deferred), p99 over the floor's", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "deferred-over-floor-p99-ms"), Shown: "ms", Target: Below(200)},
	{Area: AreaPools, What: "50 pods at once, synchronous bookkeeping, p50", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "sync-p50-ms"), Scale: 1e-3, Shown: "s"},
	{Area: AreaPools, What: "50 pods at once, no pool, p50", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "unpooled-p50-ms"), Scale: 1e-3, Shown: "s"},
	{Area: AreaPools, What: "50 pods at once, the lab's own network (no Neutron), p50: the floor", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "floor-p50-ms"), Scale: 1e-3, Shown: "s"},
	{Area: AreaPools, What: "Neutron requests per pod, churn of real pods", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "churn-neutron-requests/pod"), Target: AtMost(1)},
	{Area: AreaPools, What: "a churned pod to Ready, parked devices, p50", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "churn-p50-ms"), Shown: "ms"},
	{Area: AreaPools, What: "a churned pod to Ready, no parked device, p50", Job: "podpools", Of: m("BenchmarkPooledPodsToReady", "churn-unparked-p50-ms"), Shown: "ms"},
	{Area: AreaPools, What: "netshift-cni's ADD on a real switch, fresh device", Job: "wiring", Of: m("BenchmarkPooledPodWiring/fresh", "ns/op"), Scale: ns2ms, Shown: "ms"},
	{Area: AreaPools, What: "netshift-cni's ADD on a real switch, parked device", Job: "wiring", Of: m("BenchmarkPooledPodWiring/parked", "ns/op"), Scale: ns2ms, Shown: "ms"},
	{Area: AreaPools, What: "a pod from creation to Ready, one at a time, p50", Job: "podready", Of: m("BenchmarkPodCreateToReady", "one-p50-ms"), Shown: "ms"},
	{Area: AreaPools, What: "30 pods at once to Ready, p99", Job: "podready", Of: m("BenchmarkPodCreateToReady", "burst-p99-ms"), Shown: "ms"},

	// VM migration.
	{Area: AreaMigration, What: "per-port plugging: datagrams lost in 10 migrations", Job: "migration", Of: m("BenchmarkVMMigration", "perport-lost"), Target: AtMost(0)},
	{Area: AreaMigration, What: "per-port plugging: longest gap", Job: "migration", Of: m("BenchmarkVMMigration", "perport-maxgap-ms"), Shown: "ms", Target: Below(50)},
	{Area: AreaMigration, What: "direct plugging (classic): datagrams lost in 10 migrations", Job: "migration", Of: m("BenchmarkVMMigration", "direct-lost")},
	{Area: AreaMigration, What: "direct plugging: longest gap", Job: "migration", Of: m("BenchmarkVMMigration", "direct-maxgap-ms"), Shown: "ms"},
	{Area: AreaMigration, What: "per-port: source pod deleted to the port bound on the target alone, p50", Job: "migration", Of: m("BenchmarkVMMigration", "perport-handover-p50-ms"), Shown: "ms"},
	{Area: AreaMigration, What: "a QEMU guest, per-port: datagrams sent after QEMU's RESUME lost in 20 migrations", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-lost-after-resume"), Target: AtMost(0)},
	{Area: AreaMigration, What: "a QEMU guest, per-port: migrations whose target was reported ready after the RESUME", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-ready-late"), Target: AtMost(0)},
	{Area: AreaMigration, What: "a QEMU guest, per-port: datagrams lost while it ran on the source, its target prepared", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-lost-before-stop"), Target: AtMost(0)},
	{Area: AreaMigration, What: "a QEMU guest, per-port: datagrams lost while it was stopped (reaching its old host)", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-lost-while-stopped")},
	{Area: AreaMigration, What: "a QEMU guest, direct plugging: datagrams lost while it was stopped, beside per-port's", Job: "qemu", Of: m("BenchmarkQEMUMigration", "direct-lost-while-stopped")},
	{Area: AreaMigration, What: "a QEMU guest, per-port: datagrams answered twice (given again to the resumed guest after the source had them)", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-answered-twice")},
	{Area: AreaMigration, What: "a QEMU guest, per-port: migrations losing more while stopped than QEMU's downtime times the rate, plus one", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-over-stopped-bound"), Target: AtMost(0)},
	{Area: AreaMigration, What: "a QEMU guest, per-port: QEMU's downtime, p50", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-downtime-p50-ms"), Shown: "ms"},
	{Area: AreaMigration, What: "a QEMU guest, per-port: STOP to RESUME, p50", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-stop-resume-p50-ms"), Shown: "ms"},
	{Area: AreaMigration, What: "a QEMU guest, per-port: longest wait after the RESUME, p50", Job: "qemu", Of: m("BenchmarkQEMUMigration", "perport-resume-gap-p50-ms"), Shown: "ms"},
	{Area: AreaMigration, What: "the same guest between two QEMUs on a plain bridge (its own warm-up): longest wait after a resume", Job: "qemu", Of: m("BenchmarkQEMUMigration", "guest-warmup-gap-ms"), Shown: "ms"},
	{Area: AreaMigration, What: "a QEMU guest, direct plugging: datagrams sent after the RESUME lost in 20 migrations", Job: "qemu", Of: m("BenchmarkQEMUMigration", "direct-lost-after-resume")},

	// Zones.
	{Area: AreaZones, What: "a node's move, its own connections' longest gap (worst of 6 moves)", Job: "zones", Of: m("BenchmarkZoneMoves", "moving-maxgap-ms"), Shown: "ms", Target: Below(500)},
	{Area: AreaZones, What: "a node's move, the other nodes' longest gap", Job: "zones", Of: m("BenchmarkZoneMoves", "others-maxgap-ms"), Shown: "ms", Target: Below(100)},
	{Area: AreaZones, What: "long-lived connections broken", Job: "zones", Of: m("BenchmarkZoneMoves", "broken"), Target: AtMost(0)},
	{Area: AreaZones, What: "requests failed", Job: "zones", Of: m("BenchmarkZoneMoves", "failed-requests"), Target: AtMost(0)},
	{Area: AreaZones, What: "the same moves by the lab alone (no plugin pod restart), moving node's longest gap", Job: "zones", Of: m("BenchmarkZoneMoves", "direct-moving-maxgap-ms"), Shown: "ms"},
	{Area: AreaZones, What: "OVN-Kubernetes: a node's move through ovnkube's own objects, its own connections' longest gap (worst of 6)", Job: "ovnk", Of: m(ovnk, "moving-maxgap-ms"), Shown: "ms", Target: Below(1000), Held: heldByOVNKubernetes},
	{Area: AreaZones, What: "OVN-Kubernetes: a node's move, the other nodes' longest gap", Job: "ovnk", Of: m(ovnk, "others-maxgap-ms"), Shown: "ms", Target: Below(100), Held: heldByOVNKubernetes},
	{Area: AreaZones, What: "OVN-Kubernetes: long-lived connections broken", Job: "ovnk", Of: m(ovnk, "zone-broken"), Target: AtMost(0)},
	{Area: AreaZones, What: "OVN-Kubernetes: requests failed", Job: "ovnk", Of: m(ovnk, "zone-failed-requests"), Target: AtMost(0), Held: heldByOVNKubernetes},

	// Thousands of simulated nodes.
	{Area: AreaScale, What: "live MTU change, spec patch to Succeeded, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "patch-to-end-s"), Shown: "s", Target: Below(60), Held: heldByAPIServer},
	{Area: AreaScale, What: "live MTU change, 1,000 nodes", Job: "scale", Of: m(mtuAt(1000), "patch-to-end-s"), Shown: "s"},
	{Area: AreaScale, What: "live MTU change, 500 nodes", Job: "scale", Of: m(mtuAt(500), "patch-to-end-s"), Shown: "s"},
	{Area: AreaScale, What: "live MTU change, 100 nodes", Job: "scale", Of: m(mtuAt(100), "patch-to-end-s"), Shown: "s"},
	{Area: AreaScale, What: "5,000 nodes' time over 500 nodes'", Job: "scale", Of: m(mtuAt(5000), "patch-to-end-s"), Per: &Metric{mtuAt(500), "patch-to-end-s"}, Shown: "×", Target: AtMost(12), Held: heldByGrowth},
	{Area: AreaScale, What: "API writes per node (operator and agents), 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "writes/node"), Target: AtMost(6), Held: heldByRetries},
	{Area: AreaScale, What: "the operator's of them, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "operator-writes/node")},
	{Area: AreaScale, What: "the agents' of them, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "agents-writes/node")},
	{Area: AreaScale, What: "5,000 nodes' writes per node over 500 nodes'", Job: "scale", Of: m(mtuAt(5000), "writes/node"), Per: &Metric{mtuAt(500), "writes/node"}, Shown: "×", Target: AtMost(1.2), Held: heldByRetries},
	{Area: AreaScale, What: "the operator's peak memory, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "operator-peak-MiB"), Shown: "MiB", Target: Below(1024)},
	{Area: AreaScale, What: "spec patch to every node's preconditions reported, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "preconditions-s"), Shown: "s"},
	{Area: AreaScale, What: "T0's lead as the cluster's plan or the status first showed it, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "lead-s"), Shown: "s"},
	{Area: AreaScale, What: "T0 to Succeeded, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "t0-to-end-s"), Shown: "s"},
	{Area: AreaScale, What: "how late the nodes' steps started, p99, 5,000 nodes (one process for every agent)", Job: "scale", Of: m(mtuAt(5000), "step-late-p99-ms"), Shown: "ms"},
	{Area: AreaScale, What: "CPU of the change: the operator, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "operator-cpu-s"), Shown: "s"},
	{Area: AreaScale, What: "CPU of the change: kube-apiserver, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "apiserver-cpu-s"), Shown: "s"},
	{Area: AreaScale, What: "CPU of the change: etcd, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "etcd-cpu-s"), Shown: "s"},
	{Area: AreaScale, What: "CPU of the change: the 5,000 agents", Job: "scale", Of: m(mtuAt(5000), "agents-cpu-s"), Shown: "s"},
	{Area: AreaScale, What: "CPU of the change: kwok, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "kwok-cpu-s"), Shown: "s"},
	{Area: AreaScale, What: "CPU of the change: kube-controller-manager, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "kcm-cpu-s"), Shown: "s"},
	{Area: AreaScale, What: "writes the API server served a second, every writer, during the change, 5,000 nodes", Job: "scale", Of: m(mtuAt(5000), "apiserver-writes/s")},
	{Area: AreaScale, What: "of them, per node: lease renewals (kwok renews each every 10 s, as a kubelet does, as far as its share of the CPU lets it)", Job: "scale", Of: m(mtuAt(5000), "lease-writes/node")},
	{Area: AreaScale, What: "of them, per node: NetshiftNodeStates (the operator's and the agents')", Job: "scale", Of: m(mtuAt(5000), "nodestate-writes/node")},
	{Area: AreaScale, What: "of them, per node: Nodes (kwok's status updates: a live change cordons no node that keeps up)", Job: "scale", Of: m(mtuAt(5000), "node-writes/node")},
	{Area: AreaScale, What: "of them, per node: answered 429 (too many requests: the API server's priority-and-fairness queue held them too long), each sent again by client-go", Job: "scale", Of: m(mtuAt(5000), "apiserver-429-writes/node")},
	{Area: AreaScale, What: "writes the API server served a second, every writer, 1,000 nodes", Job: "scale", Of: m(mtuAt(1000), "apiserver-writes/s")},
	{Area: AreaScale, What: "writes the API server served a second, every writer, 500 nodes", Job: "scale", Of: m(mtuAt(500), "apiserver-writes/s")},
	{Area: AreaScale, What: "of them, per node: lease renewals, 500 nodes", Job: "scale", Of: m(mtuAt(500), "lease-writes/node")},
	{Area: AreaScale, What: "live VXLAN port change, spec patch to Succeeded, 5,000 nodes", Job: "scale", Of: m(portAt(5000), "patch-to-end-s"), Shown: "s", Target: Below(60), Held: heldByAPIServer},
	{Area: AreaScale, What: "live VXLAN port change, 1,000 nodes", Job: "scale", Of: m(portAt(1000), "patch-to-end-s"), Shown: "s"},
	{Area: AreaScale, What: "API writes per node, port change, 5,000 nodes", Job: "scale", Of: m(portAt(5000), "writes/node"), Target: AtMost(6), Held: heldByRetries},
	{Area: AreaScale, What: "MTU change, 5,000 nodes, 1 % failing their first step and 1 % silent after their preconditions: failing nodes", Job: "scale", Of: m(faultsAt(5000), "failing-nodes")},
	{Area: AreaScale, What: "the same: failing nodes not restored to the old MTU", Job: "scale", Of: m(faultsAt(5000), "failing-not-restored"), Target: AtMost(0)},
	{Area: AreaScale, What: "the same: failing nodes the change's status does not name", Job: "scale", Of: m(faultsAt(5000), "failing-not-reported"), Target: AtMost(0)},
	{Area: AreaScale, What: "the same: nodes neither failing nor silent left without the new MTU", Job: "scale", Of: m(faultsAt(5000), "others-not-applied"), Target: AtMost(0)},
	{Area: AreaScale, What: "the same: spec patch to the change's end", Job: "scale", Of: m(faultsAt(5000), "patch-to-end-s"), Shown: "s"},
	{Area: AreaScale, What: "drain of 1,000 nodes, 10 pods each, 10 pools of mixed priorities, maxParallel 10 %: waves of the busiest pool (from the Nodes' watch, each cordon takes the slot its pool freed last; the most nodes one slot took; ideal 10)", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "waves"), Target: AtMost(10)},
	{Area: AreaScale, What: "the same, in time: the busiest pool's first cordon to its last uncordon over a node's median cordoned time (slots empty between a node and the next, and slow nodes, make it more than the waves)", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "timed-waves"), Target: Below(11), Held: heldBySlowNodes},
	{Area: AreaScale, What: "the same: a node's cordoned time, median", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "node-cordoned-s"), Shown: "s"},
	{Area: AreaScale, What: "the same: pool limits exceeded at any moment of the Nodes' watch", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "over-limit"), Target: AtMost(0)},
	{Area: AreaScale, What: "the same: its ideal waves", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "ideal-waves")},
	{Area: AreaScale, What: "the same: time in all", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "drain-s"), Shown: "s"},
	{Area: AreaScale, What: "the same: time per ideal wave", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "s/ideal-wave"), Shown: "s"},
	{Area: AreaScale, What: "the same: API writes per node (operator and agents; evictions included)", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "writes/node")},
	{Area: AreaScale, What: "the same: the operator's CPU", Job: "scaledrain", Of: m("BenchmarkScaleDrain/nodes=1000", "operator-cpu-s"), Shown: "s"},

	// The lab.
	{Area: AreaLab, What: "lab up, 3 real nodes", Job: "lab", Of: m("BenchmarkLabUpDown/nodes=3", "up-s"), Shown: "s"},
	{Area: AreaLab, What: "lab down, 3 real nodes", Job: "lab", Of: m("BenchmarkLabUpDown/nodes=3", "down-s"), Shown: "s"},
	{Area: AreaLab, What: "resident memory of everything a 3-node lab runs", Job: "lab", Of: m("BenchmarkLabUpDown/nodes=3", "MiB"), Shown: "MiB"},
	{Area: AreaLab, What: "lab up, 10 real nodes", Job: "lab", Of: m("BenchmarkLabUpDown/nodes=10", "up-s"), Shown: "s"},
	{Area: AreaLab, What: "resident memory, 10 real nodes", Job: "lab", Of: m("BenchmarkLabUpDown/nodes=10", "MiB"), Shown: "MiB"},
}
