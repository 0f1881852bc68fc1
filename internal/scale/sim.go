package scale

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/apicount"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/simnode"
)

// Scenarios Run can run.
const (
	RunMTU   = "mtu"
	RunPort  = "port"
	RunDrain = "drain"
)

// Options say what to simulate.
type Options struct {
	// Nodes is how many simulated nodes (10 to 10000).
	Nodes int
	// Run is the scenario: RunMTU, RunPort or RunDrain.
	Run string
	// FailPercent of the nodes fail a step, SilentPercent go silent once they answered their
	// preconditions (live changes only).
	FailPercent, SilentPercent float64
	// PodsPerNode are the drain's pods on each node; Pools the drain's NetshiftNodePools (0: 10).
	PodsPerNode, Pools int
	// WorkTime is how long each node's reconfiguration takes once drained (drain only).
	WorkTime time.Duration
	// AgentWriteSpacing is the operator's --agent-write-spacing (0: its default).
	AgentWriteSpacing time.Duration
	// Netshift is the netshift binary whose operator command runs the operator.
	Netshift string
	// Dir holds the cluster's files while it runs (default: a temporary directory, removed after).
	Dir string
	// Timeout bounds the scenario (default 10 minutes).
	Timeout time.Duration
	Out     io.Writer
}

// Validate names the option that is out of range.
func (o Options) Validate() error {
	switch {
	case o.Nodes < 10 || o.Nodes > 10000:
		return fmt.Errorf("--nodes %d: must be from 10 to 10000", o.Nodes)
	case o.Run != RunMTU && o.Run != RunPort && o.Run != RunDrain:
		return fmt.Errorf("--run %q: must be %s, %s or %s", o.Run, RunMTU, RunPort, RunDrain)
	case o.FailPercent < 0 || o.FailPercent > 10:
		return fmt.Errorf("--fail-percent %g: must be from 0 to 10", o.FailPercent)
	case o.SilentPercent < 0 || o.SilentPercent > 10:
		return fmt.Errorf("--silent-percent %g: must be from 0 to 10", o.SilentPercent)
	case o.PodsPerNode < 0 || o.PodsPerNode > 100:
		return fmt.Errorf("--pods-per-node %d: must be from 0 to 100", o.PodsPerNode)
	case o.Pools < 1 || o.Pools > 100:
		return fmt.Errorf("--pools %d: must be from 1 to 100", o.Pools)
	case o.WorkTime < 0 || o.WorkTime > time.Minute:
		return fmt.Errorf("--work-time %s: must be from 0s to 1m", o.WorkTime)
	case o.AgentWriteSpacing != 0 && (o.AgentWriteSpacing < livechange.MinAgentWriteSpacing || o.AgentWriteSpacing > livechange.MaxAgentWriteSpacing):
		return fmt.Errorf("--agent-write-spacing %s: must be from %s to %s (0: the operator's default)", o.AgentWriteSpacing,
			livechange.MinAgentWriteSpacing, livechange.MaxAgentWriteSpacing)
	}
	return nil
}

// Report is what one run measured.
type Report struct {
	Nodes int    `json:"nodes"`
	Run   string `json:"run"`
	// AgentWriteSpacing is the operator's --agent-write-spacing in the run, as a duration.
	AgentWriteSpacing string `json:"agentWriteSpacing"`
	// SetUpSeconds is how long the cluster took to come up (control plane, kwok, Nodes, agents).
	SetUpSeconds float64       `json:"setUpSeconds"`
	Change       *ChangeReport `json:"change,omitempty"`
	Drain        *DrainReport  `json:"drain,omitempty"`
}

// Cost is what a scenario cost the API server and the processes.
type Cost struct {
	// Requests are the API requests per node by writer ("operator", "agents") and verb.
	Requests map[string]map[string]float64 `json:"requestsPerNode"`
	// WritesPerNode are the operator's and the agents' writes per node, together.
	WritesPerNode float64 `json:"writesPerNode"`
	// APIServerWrites are every writer's writes the API server served (its own count,
	// apiserver_request_total), per node by resource: netshift's beside kwok's leases and
	// the controllers'. APIServerWritesPerSecond is their rate over the scenario.
	APIServerWrites          map[string]float64 `json:"apiServerWritesPerNode,omitempty"`
	APIServerWritesPerSecond float64            `json:"apiServerWritesPerSecond,omitempty"`
	// APIServerTooMany are those of the writes it answered 429 (too many requests: its
	// priority and fairness queue held them too long), per node; client-go sent each again.
	APIServerTooMany float64 `json:"apiServerTooManyPerNode,omitempty"`
	// Usage is the CPU and peak memory of the operator, the API server, etcd, kwok, the
	// controller manager, the scheduler and the agents' process.
	Usage map[string]*Usage `json:"usage"`
}

// costMeter measures a scenario's cost from its start.
type costMeter struct {
	s         *sim
	began     time.Time
	operator  map[apicount.Key]int64
	apiServer map[apicount.Key]int64
	tooMany   map[apicount.Key]int64 // the API server's 429 answers
	usage     map[string]*Usage
}

func (s *sim) startCost(ctx context.Context) *costMeter {
	m := &costMeter{s: s, usage: map[string]*Usage{}, began: time.Now()}
	s.agents.requests.Take()
	m.operator, _ = scrapeRequests(ctx, s.cluster.metricsURL)
	m.apiServer, m.tooMany, _ = scrapeAPIServer(ctx, s.cluster.cp.Admin)
	for _, p := range s.cluster.procs {
		m.usage[p.name] = meter(p.cmd.Process.Pid)
	}
	for name, pid := range s.cluster.cp.ControllerPids() {
		m.usage[name] = meter(pid)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if pid, err := childNamed(name); err == nil {
			m.usage[name] = meter(pid)
		}
	}
	m.usage["agents (this process)"] = selfUsage()
	return m
}

func (m *costMeter) stop(ctx context.Context, nodes int) Cost {
	c := Cost{Requests: map[string]map[string]float64{"operator": {}, "agents": {}}, Usage: m.usage}
	for _, u := range m.usage {
		u.read()
	}
	after, err := scrapeRequests(ctx, m.s.cluster.metricsURL)
	if err != nil {
		fmt.Fprintf(m.s.out, "scale: %v\n", err)
	}
	add := func(writer string, k apicount.Key, n int64) {
		per := float64(n) / float64(nodes)
		c.Requests[writer][k.Verb] += per
		if apicount.IsWrite(k.Verb) {
			c.WritesPerNode += per
		}
	}
	for k, n := range after {
		if k.Resource != "leases" { // leader election and the agents' own: not the change's
			add("operator", k, n-m.operator[k])
		}
	}
	for k, n := range m.s.agents.requests.Take() {
		add("agents", k, n)
	}
	m.apiServerWrites(ctx, &c, nodes)
	return c
}

// apiServerWrites fills in the writes the API server counted since the start, by resource.
func (m *costMeter) apiServerWrites(ctx context.Context, c *Cost, nodes int) {
	if m.apiServer == nil {
		fmt.Fprintf(m.s.out, "scale: the API server's count of writes was not read at the start\n")
		return
	}
	after, tooMany, err := scrapeAPIServer(ctx, m.s.cluster.cp.Admin)
	if err != nil {
		fmt.Fprintf(m.s.out, "scale: the API server's count of writes: %v\n", err)
		return
	}
	for k, n := range tooMany {
		if d := float64(n - m.tooMany[k]); apicount.IsWrite(k.Verb) && d > 0 {
			c.APIServerTooMany += d / float64(nodes)
		}
	}
	c.APIServerWrites = map[string]float64{}
	total := 0.0
	for k, n := range after {
		if d := float64(n - m.apiServer[k]); apicount.IsWrite(k.Verb) && d > 0 {
			c.APIServerWrites[k.Resource] += d / float64(nodes)
			total += d
		}
	}
	c.APIServerWritesPerSecond = total / time.Since(m.began).Seconds()
}

// sim is a running simulated cluster.
type sim struct {
	cluster *cluster
	agents  *agents
	nodes   map[string]*simnode.Node
	names   []string
	out     io.Writer
}

const (
	networkName  = "cluster"
	startMTU     = 1400
	startPort    = 4789
	underlayMTU  = 9000
	nodeNameForm = "sim-%05d"
)

func (s *sim) initial(kind v1alpha1.ChangeKind) int {
	if kind == v1alpha1.ChangeMTU {
		return startMTU
	}
	return startPort
}

// Run brings up a simulated cluster of o.Nodes nodes, runs o.Run on it and takes it all down.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Pools == 0 {
		o.Pools = 10
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	dir := o.Dir
	if dir != "" {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("--dir: %w", err)
		}
	} else {
		d, err := os.MkdirTemp("", "netshift-scale-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	began := time.Now()
	spacing := cmp.Or(o.AgentWriteSpacing, livechange.DefaultAgentWriteSpacing)
	cl, err := startCluster(ctx, dir, o.Netshift, spacing, o.Out)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	// Only once the control plane, kwok and the operator run: a child takes its thread's nice.
	restoreNice, err := raiseAgentsPriority()
	if err != nil {
		fmt.Fprintf(o.Out, "scale: %v: the agents share the cores with the control plane at its priority\n", err)
	}
	defer restoreNice()
	restoreCollector := relaxCollector()
	defer restoreCollector()
	s := &sim{cluster: cl, nodes: map[string]*simnode.Node{}, out: o.Out}
	for i := range o.Nodes {
		name := fmt.Sprintf(nodeNameForm, i)
		s.names = append(s.names, name)
		// Clocks a few milliseconds apart, as NTP keeps real nodes.
		offset := time.Duration(i%11-5) * time.Millisecond
		s.nodes[name] = simnode.New(simnode.Spec{Name: name, Pods: 10, MTU: startMTU, UnderlayMTU: underlayMTU,
			Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: startPort, ClockOffset: offset})
	}
	if err := s.setUp(ctx, o); err != nil {
		return nil, err
	}
	defer s.agents.stopAll()
	r := &Report{Nodes: o.Nodes, Run: o.Run, SetUpSeconds: time.Since(began).Seconds(),
		AgentWriteSpacing: spacing.String()}
	fmt.Fprintf(o.Out, "scale: %d nodes up in %s\n", o.Nodes, time.Since(began).Round(time.Second))
	switch o.Run {
	case RunMTU:
		r.Change, err = s.runChange(ctx, v1alpha1.ChangeMTU, startMTU-100, o)
	case RunPort:
		r.Change, err = s.runChange(ctx, v1alpha1.ChangeVXLANPort, startPort+1, o)
	case RunDrain:
		r.Drain, err = s.runDrain(ctx, o)
	}
	return r, err
}

// setUp creates the Nodes (labelled for the drain's pools, which runDrain creates) and the
// NetshiftNetwork, and starts the agents.
func (s *sim) setUp(ctx context.Context, o Options) error {
	pools := max(o.Pools, 1)
	poolOf := func(i int) map[string]string { return map[string]string{poolLabel: fmt.Sprintf("pool-%02d", i%pools)} }
	if err := s.cluster.createNodes(ctx, s.names, poolOf); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "scale: %d Nodes created; waiting for kwok to keep them Ready and the operator to make their NetshiftNodeStates\n", len(s.names))
	if err := s.cluster.waitReady(ctx, len(s.names), 5*time.Minute); err != nil {
		return err
	}
	net := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: networkName}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: ptr.To(int32(startMTU)),
		VXLANPort: startPort, Encapsulation: v1alpha1.EncapVXLAN}}
	if err := s.cluster.cp.Client.Create(ctx, net); err != nil {
		return fmt.Errorf("create NetshiftNetwork %s: %w", networkName, err)
	}
	var err error
	if s.agents, err = s.cluster.startAgents(ctx, s.nodes, s.names, o.WorkTime); err != nil {
		return err
	}
	return s.waitObserved(ctx)
}

// waitObserved waits until every agent reported its node's network and the
// operator recorded it applied and every node's pool (the implicit default
// pool: the drain's come later): a scenario is measured on a cluster netshift
// has taken up, as an operator starts one. It does not wait
// for kube-controller-manager to lift the new nodes' not-ready taints, which
// at its default rate takes minutes at thousands of nodes: it says how many
// are left, whose writes go on during the change.
func (s *sim) waitObserved(ctx context.Context) error {
	const within = 5 * time.Minute
	deadline := time.Now().Add(within)
	for {
		var states v1alpha1.NetshiftNodeStateList
		observed, pooled := 0, 0
		if err := s.cluster.cp.Client.List(ctx, &states); err == nil {
			for _, st := range states.Items {
				if st.Status.Network != nil {
					observed++
				}
				if st.Status.Pool != "" {
					pooled++
				}
			}
		}
		var net v1alpha1.NetshiftNetwork
		_ = s.cluster.cp.Client.Get(ctx, client.ObjectKey{Name: networkName}, &net)
		n := len(s.names)
		if observed >= n && pooled >= n && net.Status.Applied != nil {
			s.sayTainted(ctx)
			return nil
		}
		progress := fmt.Sprintf("%d of %d agents reported their node's network (applied recorded: %v) and %d of %d nodes have their pool recorded",
			observed, n, net.Status.Applied != nil, pooled, n)
		if e := s.cluster.ended(); e != "" {
			return fmt.Errorf("while %s: %s", progress, e)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %s", within, progress)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// sayTainted says how many nodes still carry the not-ready taint: its lifting
// goes on during the scenario, its writes counted among the API server's.
func (s *sim) sayTainted(ctx context.Context) {
	var nodes corev1.NodeList
	if err := s.cluster.cp.Client.List(ctx, &nodes); err != nil {
		return
	}
	tainted := 0
	for _, n := range nodes.Items {
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			tainted++
		}
	}
	if tainted > 0 {
		fmt.Fprintf(s.out, "scale: %d of %d nodes still carry the not-ready taint, which kube-controller-manager goes on lifting at its own pace during the run\n", tainted, len(nodes.Items))
	}
}

// poolLabel puts each simulated node in its pool.
const poolLabel = "netshift.io/scale-pool"

// intOrPercent is percent as a NetshiftNetwork percentage, rounded up.
func intOrPercent(percent float64) intstr.IntOrString {
	return intstr.FromString(fmt.Sprintf("%d%%", int(percent+0.999)))
}

// WriteText prints r for a person.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%d simulated nodes, %s; set up in %.0f s\n", r.Nodes, r.Run, r.SetUpSeconds)
	if c := r.Change; c != nil {
		fmt.Fprintf(w, "change %s: %s", c.Kind, c.Phase)
		if c.Message != "" {
			fmt.Fprintf(w, " (%s)", clip(c.Message, 200))
		}
		fmt.Fprintf(w, "\n  spec patch to every precondition reported: %.2f s\n  T0 lead as first seen (plan or status): %.2f s\n  T0 to the end: %.2f s\n  spec patch to the end: %.2f s\n",
			c.PreconditionsSeconds, c.LeadSeconds, c.T0ToEndSeconds, c.TotalSeconds)
		fmt.Fprintf(w, "  steps run %d (and %d again), started late p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d over 100 ms\n", c.StepsRun, c.StepsAgain, c.StepLateMs[0], c.StepLateMs[1], c.StepLateMs[2], c.StepsLate)
		fmt.Fprintf(w, "  nodes carrying the new value: %d of %d", c.Applied, c.Nodes)
		if len(c.Failed) > 0 {
			fmt.Fprintf(w, "; failing nodes %d, restored %d, named in the status %d", len(c.Failed), c.Restored, c.Reported)
		}
		if len(c.Silent) > 0 {
			fmt.Fprintf(w, "; silent nodes %d", len(c.Silent))
		}
		fmt.Fprintln(w)
		c.writeText(w)
	}
	if d := r.Drain; d != nil {
		d.writeText(w)
	}
}

func (c Cost) writeText(w io.Writer) {
	fmt.Fprintf(w, "  API writes per node (operator and agents): %.2f\n", c.WritesPerNode)
	for _, who := range []string{"operator", "agents"} {
		verbs := make([]string, 0, len(c.Requests[who]))
		for v := range c.Requests[who] {
			verbs = append(verbs, v)
		}
		sort.Strings(verbs)
		fmt.Fprintf(w, "  %s requests per node:", who)
		for _, v := range verbs {
			fmt.Fprintf(w, " %s %.2f", v, c.Requests[who][v])
		}
		fmt.Fprintln(w)
	}
	if len(c.APIServerWrites) > 0 {
		resources := make([]string, 0, len(c.APIServerWrites))
		for r := range c.APIServerWrites {
			resources = append(resources, r)
		}
		sort.Slice(resources, func(i, j int) bool { return c.APIServerWrites[resources[i]] > c.APIServerWrites[resources[j]] })
		fmt.Fprintf(w, "  writes the API server served, every writer (%.0f a second), per node:", c.APIServerWritesPerSecond)
		for _, r := range resources[:min(len(resources), 8)] {
			fmt.Fprintf(w, " %s %.2f", r, c.APIServerWrites[r])
		}
		fmt.Fprintf(w, "; of them answered 429 (too many requests) and sent again: %.2f per node\n", c.APIServerTooMany)
	}
	names := make([]string, 0, len(c.Usage))
	for n := range c.Usage {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %s: %.1f CPU s, peak memory %.0f MiB\n", n, c.Usage[n].CPUSeconds, c.Usage[n].PeakRSSMiB)
	}
}

// WriteJSON prints r as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Problem says what went wrong in the run that the figures alone do not ("" when nothing did):
// a change that did not end as it should, nodes left on neither value.
func (r *Report) Problem() string {
	if c := r.Change; c != nil {
		want := v1alpha1.PhaseSucceeded
		if c.Phase != want && len(c.Failed) == 0 && len(c.Silent) == 0 {
			return fmt.Sprintf("the change ended %s, not %s: %s", c.Phase, want, c.Message)
		}
		if c.Restored < len(c.Failed) {
			return fmt.Sprintf("%d of %d failing nodes were not restored to the old value", len(c.Failed)-c.Restored, len(c.Failed))
		}
	}
	if d := r.Drain; d != nil {
		if len(d.OverLimit) > 0 {
			return fmt.Sprintf("pools over their limit: %s", clip(fmt.Sprint(d.OverLimit), 300))
		}
		if len(d.Failed) > 0 {
			return fmt.Sprintf("%d nodes' operation failed", len(d.Failed))
		}
	}
	return ""
}
