package lab

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"

	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/lab/standin"
	"netshift.io/netshift/internal/netplugin/ovnkubernetes"
	"netshift.io/netshift/internal/zones"
)

// ZoneStep is one step of the zone benchmark, measured by the probe running
// around it alone.
type ZoneStep struct {
	// Node is the node that moved ("" for a step of the central zone).
	Node string `json:"node,omitempty"`
	// Step says what happened: "node-1 -> node-1", "central retired", ...
	Step   string  `json:"step"`
	TookMs float64 `json:"tookMs"`
	// MovingMaxGapMs is the longest silence of a long-lived connection with an end
	// on the moving node; OthersMaxGapMs of those between the other nodes.
	MovingMaxGapMs float64 `json:"movingMaxGapMs"`
	OthersMaxGapMs float64 `json:"othersMaxGapMs"`
	// Broken counts the long-lived connections that did not survive; Failures the
	// short-lived and HTTPS requests that failed.
	Broken   int `json:"broken"`
	Failures int `json:"failures"`
}

// ZoneBenchReport is what `lab zone-bench` prints: the moves through the
// network plugin's objects, and (with --direct) the same moves run by the
// lab alone, without the plugin pod's restart, measured beside them.
type ZoneBenchReport struct {
	ZonePathReport
	// Direct are the moves the lab runs alone (what a move command ran before
	// netshift moved nodes through the plugin's objects); nil without --direct.
	Direct *ZonePathReport `json:"direct,omitempty"`
}

// ZonePathReport is one path's steps and their worst.
type ZonePathReport struct {
	Steps []ZoneStep `json:"steps"`
	// The worst of the node moves: the target is moving under 500 ms, others under 100 ms.
	MaxMovingGapMs float64 `json:"maxMovingGapMs"`
	MaxOthersGapMs float64 `json:"maxOthersGapMs"`
	Broken         int     `json:"broken"`
	Failures       int     `json:"failures"`
}

// zoneMoves are the moves of one path: a node into a zone, the central zone
// retired or started.
type zoneMoves struct {
	node    func(node, zone string) error
	central func(start bool) error
	// settle is how long the probe runs on after a step: the window in
	// which a gap the step caused still shows.
	settle time.Duration
}

// labSettle is the lab's own moves' settle; ovnkSettle the real
// OVN-Kubernetes', whose moved node's connections come back at TCP's next
// retransmission after ovnkube-node, restarted, has set the node up again.
const (
	labSettle  = 700 * time.Millisecond
	ovnkSettle = 10 * time.Second
)

// ZoneBench moves a single-zone OVN lab (the lab's own OVN, or the real
// OVN-Kubernetes) to multizone node by node (name order), retires the central
// zone, starts it again and moves every node back, with the probe running
// around each step alone, and reports each.
// Every step goes the way netshift's operator takes it, through the network
// plugin's objects: a node is labelled for its zone and its plugin pod
// deleted, and the step ends once the pod the DaemonSet starts in its place
// has annotated the node; the central zone is its Deployment scaled to 0 and
// back to 1. The operator is scaled to 0 meanwhile (its zone controller would
// otherwise take the lab back to the layout its ConfigMap asks for) and
// restored at the end. With direct, the same steps are run first by the
// lab alone (its move and central commands, as a move command ran them),
// which leaves the nodes' labels, annotations and plugin pods as they were.
func ZoneBench(ctx context.Context, name string, direct bool, out io.Writer) (rep ZoneBenchReport, err error) {
	s, err := LoadState(name)
	if err != nil {
		return rep, err
	}
	if s.runsOVNKubernetes() && len(s.Topology.Nodes) >= 2 {
		if direct {
			return rep, fmt.Errorf("lab %s: --direct moves nodes with the lab's own OVN (lab up --ovn), not OVN-Kubernetes'", name)
		}
		return rep, ovnkZoneBench(ctx, s, &rep.ZonePathReport, out)
	}
	if !s.Options.OVN || len(s.Topology.Nodes) < 2 {
		return rep, fmt.Errorf("lab %s: the zone benchmark needs an OVN lab (--ovn or --ovn-kubernetes) of at least 2 nodes", name)
	}
	if err := s.centralUp(); err != nil {
		return rep, fmt.Errorf("lab %s: the zone benchmark starts from a single-zone lab: %w", name, err)
	}
	ic := s.Interconnect()
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return rep, err
	}
	nodes, err := ic.GlobalNodes(ctx, shellCommands{sh, s})
	sh.close()
	if err != nil {
		return rep, err
	}
	if len(nodes) != len(s.Topology.Nodes) {
		return rep, fmt.Errorf("lab %s: the zone benchmark starts from a single-zone lab, but only %v are in the global zone", name, nodes)
	}
	c, err := s.Client()
	if err != nil {
		return rep, err
	}
	restore, err := pauseOperator(ctx, c)
	if err != nil {
		return rep, err
	}
	defer func() {
		if rerr := restore(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	cfg, err := s.ProbeConfig(ctx, 0)
	if err != nil {
		return rep, err
	}
	nodeOf, err := s.podNodes(ctx)
	if err != nil {
		return rep, err
	}
	quiet := func(string, ...any) {}
	if direct {
		fmt.Fprintln(out, "the lab's moves alone (direct):")
		rep.Direct = &ZonePathReport{}
		if err := zonePath(ctx, s, cfg, nodeOf, rep.Direct, out, zoneMoves{
			node: func(node, zone string) error { return ic.MoveZone(ctx, node, zone, quiet) },
			central: func(start bool) error {
				if start {
					return ic.CentralEnsure(ctx)
				}
				return ic.CentralRetire(ctx)
			},
			settle: labSettle,
		}); err != nil {
			return rep, fmt.Errorf("direct: %w", err)
		}
		fmt.Fprintln(out, "through the network plugin's objects (label, plugin pod restart, Deployment scaled):")
	}
	err = zonePath(ctx, s, cfg, nodeOf, &rep.ZonePathReport, out, zoneMoves{
		node:    func(node, zone string) error { return standin.RestartIntoZone(ctx, c, node, zone) },
		central: func(start bool) error { return s.scaleCentral(ctx, c, replicasFor(start)) },
		settle:  labSettle,
	})
	return rep, err
}

// ovnkZoneBench is ZoneBench on the real OVN-Kubernetes, from single zone:
// every node's move goes through ovnkube's own objects (its zone label and
// its ovnkube-node pod), the central zone is ovnkube-master scaled.
func ovnkZoneBench(ctx context.Context, s *State, rep *ZonePathReport, out io.Writer) (err error) {
	c, err := s.Client()
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if z := n.Annotations[zones.ZoneAnnotation]; z != globalZone {
			return fmt.Errorf("lab %s: the zone benchmark starts from single zone (lab up --zones single), but node %s is in zone %q", s.Options.Name, n.Name, z)
		}
	}
	restore, err := pauseOperator(ctx, c)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := restore(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	cfg, err := s.ProbeConfig(ctx, 0)
	if err != nil {
		return err
	}
	nodeOf, err := s.podNodes(ctx)
	if err != nil {
		return err
	}
	central := map[string]string{"name": ovnkubernetes.CentralDeployment}
	return zonePath(ctx, s, cfg, nodeOf, rep, out, zoneMoves{
		node: func(node, zone string) error {
			return standin.RestartIntoZone(ctx, c, node, zone, zones.RemoteZoneMigrated)
		},
		central: func(start bool) error {
			return standin.ScaleDeployment(ctx, c, ovnkubernetes.CentralDeployment, central, replicasFor(start), nil)
		},
		settle: ovnkSettle,
	})
}

// replicasFor is the central Deployment's scale: 1 started, 0 retired.
func replicasFor(start bool) int32 {
	if start {
		return 1
	}
	return 0
}

// podNodes maps each of the lab's pods to its node.
func (s *State) podNodes(ctx context.Context) (map[string]string, error) {
	pods, err := s.Pods(ctx)
	if err != nil {
		return nil, err
	}
	nodeOf := map[string]string{}
	for _, p := range pods {
		nodeOf[p.Name] = p.Node
	}
	return nodeOf, nil
}

// zonePath takes every node into its own zone, the central zone down and up
// again, and every node back, through moves, the probe around each step.
func zonePath(ctx context.Context, s *State, cfg probe.Config, nodeOf map[string]string, rep *ZonePathReport, out io.Writer, moves zoneMoves) error {
	measure := func(node, step string, do func() error) error {
		r, took, err := probeAround(ctx, cfg, moves.settle, do)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		st := ZoneStep{Node: node, Step: step, TookMs: ms(took), Failures: r.ShortLived.Failures + r.HTTPS.Failures}
		for _, c := range r.LongLived {
			if node == "" || nodeOf[c.From] == node || nodeOf[c.To] == node {
				st.MovingMaxGapMs = max(st.MovingMaxGapMs, c.MaxGapMs)
			} else {
				st.OthersMaxGapMs = max(st.OthersMaxGapMs, c.MaxGapMs)
			}
			if !c.Alive {
				st.Broken++
			}
		}
		rep.Steps = append(rep.Steps, st)
		rep.Broken += st.Broken
		rep.Failures += st.Failures
		if node != "" {
			rep.MaxMovingGapMs = max(rep.MaxMovingGapMs, st.MovingMaxGapMs)
			rep.MaxOthersGapMs = max(rep.MaxOthersGapMs, st.OthersMaxGapMs)
		}
		fmt.Fprintf(out, "%-22s took %5.0f ms  moving node's connections: longest gap %6.1f ms  others: %6.1f ms  broken %d  failed requests %d\n",
			step, st.TookMs, st.MovingMaxGapMs, st.OthersMaxGapMs, st.Broken, st.Failures)
		return nil
	}
	for _, n := range s.Topology.Nodes {
		if err := measure(n.Name, n.Name+": global -> "+n.Name, func() error { return moves.node(n.Name, n.Name) }); err != nil {
			return err
		}
	}
	if err := measure("", "central zone retired", func() error { return moves.central(false) }); err != nil {
		return err
	}
	if err := measure("", "central zone started", func() error { return moves.central(true) }); err != nil {
		return err
	}
	for _, n := range s.Topology.Nodes {
		if err := measure(n.Name, n.Name+": "+n.Name+" -> global", func() error { return moves.node(n.Name, globalZone) }); err != nil {
			return err
		}
	}
	return nil
}

// probeAround runs the probe around do: do starts once every long-lived
// connection carries traffic, and the probe runs on for 700 ms after it, the
// window in which a gap do caused still shows. A probe that did not run, or
// a connection that carried nothing, is an error: never a 0 ms gap.
func probeAround(ctx context.Context, cfg probe.Config, settle time.Duration, do func() error) (probe.Report, time.Duration, error) {
	type probeRun struct {
		r   probe.Report
		err error
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan probeRun, 1)
	settled := make(chan struct{})
	cfg.Settled = settled
	go func() {
		r, err := probe.Run(pctx, cfg)
		done <- probeRun{r, err}
	}()
	select {
	case <-settled:
	case pr := <-done:
		return probe.Report{}, 0, fmt.Errorf("the probe did not start: %v", pr.err)
	case <-time.After(30 * time.Second):
		return probe.Report{}, 0, fmt.Errorf("the probe's connections did not settle in 30 s")
	}
	start := time.Now()
	err := do()
	took := time.Since(start)
	time.Sleep(settle)
	cancel()
	pr := <-done
	switch {
	case err != nil:
		return pr.r, took, err
	case pr.err != nil:
		return pr.r, took, fmt.Errorf("the probe: %w", pr.err)
	case len(pr.r.LongLived) == 0:
		return pr.r, took, fmt.Errorf("the probe measured no connection")
	}
	for _, c := range pr.r.LongLived {
		if c.Echoes == 0 {
			return pr.r, took, fmt.Errorf("the probe's connection %s -> %s carried nothing (%s): no gap can be measured", c.From, c.To, c.Error)
		}
	}
	return pr.r, took, nil
}
