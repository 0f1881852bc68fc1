// Package demo runs netshift's drain example end to end on this machine: a
// real kube-apiserver and etcd, the operator and one agent per node as their
// own processes with their own identities, the example's nodes, pools and
// pods, and a live view of the drain in `netshift status` form. Its nodes have
// no kubelets: their pods are created started and an eviction removes them at
// once (the lab drains real nodes).
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/config"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/manifests"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/plan"
	"netshift.io/netshift/internal/rollout"
	"netshift.io/netshift/internal/status"
)

// Options configure the demo.
type Options struct {
	Binary string        // the netshift binary to run the operator and agents from
	Hold   time.Duration // how long each node's work takes
	Out    io.Writer
	Keep   bool // leave everything running until interrupted
}

const demoNS = "demo"

var demoNodes = []string{"a", "b", "c", "d", "e"}

// RunDrain runs the example and returns an error if a limit was exceeded or a
// node did not finish.
func RunDrain(ctx context.Context, o Options) error {
	out := o.Out
	step := func(format string, args ...any) { fmt.Fprintf(out, "\n== "+format+"\n", args...) }

	step("starting a real kube-apiserver and etcd, installing netshift's CRDs, RBAC and admission policy")
	cp, err := controlplane.Start()
	if err != nil {
		return err
	}
	defer cp.Stop()
	dir, err := os.MkdirTemp("", "netshift-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(out, "API server %s; admin kubeconfig %s\n", cp.Admin.Host, cp.Kubeconfig)

	c := cp.Client
	if err := setUp(ctx, c); err != nil {
		return err
	}

	step("starting the operator and one agent per node, each its own process with its own identity")
	procs, err := startProcesses(ctx, cp, dir, o)
	if err != nil {
		return err
	}
	defer procs.stop()

	var nl corev1.NodeList
	var pl v1alpha1.NetshiftNodePoolList
	if err := c.List(ctx, &nl); err != nil {
		return err
	}
	if err := c.List(ctx, &pl); err != nil {
		return err
	}
	owners := map[string]string{}
	for _, only := range [][]string{{"c", "d", "e"}, nil} {
		p, err := plan.Compute(nl.Items, pl.Items, only)
		if err != nil {
			return err
		}
		owners = p.Owners
		label := "every node"
		if only != nil {
			label = strings.Join(only, ", ")
		}
		step("netshift plan --only %s", label)
		_ = p.WriteText(out)
	}
	if err := waitFor(ctx, 60*time.Second, func() bool {
		var states v1alpha1.NetshiftNodeStateList
		return c.List(ctx, &states) == nil && len(states.Items) == len(demoNodes)
	}); err != nil {
		return fmt.Errorf("the operator did not create a NetshiftNodeState per node: %w", err)
	}

	failed := false
	for i, targets := range [][]string{{"c", "d", "e"}, demoNodes} {
		op := fmt.Sprintf("demo-%d", i+1)
		step("netshift reconfigure --nodes %s   (operation %s; each node's work takes %s)", strings.Join(targets, ","), op, o.Hold)
		now := metav1.Now()
		if err := operator.StartOperation(ctx, c, v1alpha1.NodeOperation{ID: op, Kind: v1alpha1.OperationReconfigure, Reason: "demo", RequestedAt: &now}, targets); err != nil {
			return err
		}
		peaks, waves, err := follow(ctx, c, op, targets, owners, out)
		if err != nil {
			return err
		}
		planned, err := plan.Compute(nl.Items, pl.Items, targets)
		if err != nil {
			return err
		}
		verdict := "the same as netshift plan"
		if !reflect.DeepEqual(planned.Waves, waves) {
			verdict = fmt.Sprintf("netshift plan said %v (agents asked at different times)", planned.Waves)
		}
		fmt.Fprintf(out, "\nwaves as the drain controller ran them: %v, %s\n", waves, verdict)
		for _, p := range pl.Items {
			limit := p.Spec.MaxParallel.IntValue()
			verdict := "ok"
			if peaks[p.Name] > limit {
				verdict, failed = "EXCEEDED", true
			}
			fmt.Fprintf(out, "pool %s: at most %d node(s) busy at once, maxParallel %d: %s\n", p.Name, peaks[p.Name], limit, verdict)
		}
	}
	step("final netshift status")
	r, err := status.Gather(ctx, c)
	if err != nil {
		return err
	}
	_ = r.WriteText(out)
	if failed {
		return fmt.Errorf("a pool's limit was exceeded")
	}
	if o.Keep {
		step("still running; try: KUBECONFIG=%s netshift status   (Ctrl-C to stop)", cp.Kubeconfig)
		<-ctx.Done()
	}
	return nil
}

func setUp(ctx context.Context, c client.Client) error {
	objs, err := manifests.ReadFS(config.Samples)
	if err != nil {
		return err
	}
	if err := manifests.Apply(ctx, c, objs); err != nil {
		return fmt.Errorf("create the example's nodes and pools: %w", err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNS}}); err != nil {
		return err
	}
	for _, n := range demoNodes {
		for i := range 2 {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%s-%d", n, i), Namespace: demoNS, Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			}
			if err := controlplane.CreateStartedPod(ctx, c, p); err != nil {
				return err
			}
		}
	}
	return nil
}

type processes struct {
	cmds []*exec.Cmd
}

func (p *processes) stop() {
	for _, c := range p.cmds {
		if c.Process != nil {
			_ = c.Process.Signal(os.Interrupt)
		}
	}
	for _, c := range p.cmds {
		_ = c.Wait()
	}
}

func startProcesses(ctx context.Context, cp *controlplane.ControlPlane, dir string, o Options) (*processes, error) {
	p := &processes{}
	start := func(name, kubeconfig string, args ...string) error {
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, o.Binary, append(args, "--kubeconfig", kubeconfig)...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		p.cmds = append(p.cmds, cmd)
		fmt.Fprintf(o.Out, "  %-10s pid %d, log %s\n", name, cmd.Process.Pid, logf.Name())
		return nil
	}
	kc, err := cp.UserKubeconfig(dir, "netshift:operator", "netshift:operators")
	if err != nil {
		return nil, err
	}
	if err := start("operator", kc, "operator", "--leader-elect", "--metrics-bind-address", "127.0.0.1:0",
		"--health-probe-bind-address", "127.0.0.1:0", "--eviction-retry", "500ms"); err != nil {
		return nil, err
	}
	for _, n := range demoNodes {
		kc, err := cp.UserKubeconfig(dir, "netshift:agent:"+n, "netshift:agents")
		if err != nil {
			p.stop()
			return nil, err
		}
		if err := start("agent-"+n, kc, "agent", "--node", n, "--reconfigure-hold", o.Hold.String()); err != nil {
			p.stop()
			return nil, err
		}
	}
	return p, nil
}

// follow prints `netshift status` as the operation moves and returns the most
// nodes per pool that held a slot at once (sampled every 100 ms) and the
// waves: the groups of nodes granted a slot with no slot released in between.
func follow(ctx context.Context, c client.Client, op string, targets []string, owners map[string]string, out io.Writer) (map[string]int, [][]string, error) {
	peaks := map[string]int{}
	var waves [][]string
	granted := map[string]bool{}
	wasHolding := map[string]bool{}
	released := true
	lastPrint := time.Time{}
	lastShown := ""
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var states v1alpha1.NetshiftNodeStateList
		if err := c.List(ctx, &states); err != nil {
			return nil, nil, err
		}
		holding := map[string]int{}
		var wave []string
		done := 0
		for _, s := range states.Items {
			holds := rollout.HoldsSlot(s.Status.DrainStatus)
			if wasHolding[s.Name] && !holds {
				released = true
			}
			wasHolding[s.Name] = holds
			if holds {
				holding[owners[s.Name]]++
				if s.Status.DrainOperation == op && !granted[s.Name] {
					granted[s.Name] = true
					wave = append(wave, s.Name)
				}
			}
			if slices.Contains(targets, s.Name) && s.Status.SyncOperation == op &&
				s.Status.SyncStatus == v1alpha1.SyncSucceeded && s.Status.DrainStatus == v1alpha1.DrainIdle {
				done++
			}
		}
		if len(wave) > 0 {
			if released {
				waves = append(waves, nil)
				released = false
			}
			last := &waves[len(waves)-1]
			*last = append(*last, wave...)
			sort.Strings(*last)
		}
		for pool, h := range holding {
			peaks[pool] = max(peaks[pool], h)
		}
		r, err := status.Gather(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		var sb strings.Builder
		_ = r.WriteText(&sb)
		if sb.String() != lastShown && time.Since(lastPrint) > 900*time.Millisecond || done == len(targets) {
			fmt.Fprintf(out, "\n--- %s  %d/%d nodes done\n%s", time.Now().Format("15:04:05.0"), done, len(targets), sb.String())
			lastShown, lastPrint = sb.String(), time.Now()
		}
		if done == len(targets) {
			return peaks, waves, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("operation %s did not finish on %v in 3 minutes", op, targets)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
