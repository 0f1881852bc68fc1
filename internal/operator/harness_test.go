package operator_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/rollout"
	"netshift.io/netshift/internal/testenv"
)

var (
	env        *testenv.Env
	envMissing error
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, &envMissing)) }

const testNS = "work"

// cluster is one test's view of the shared API server (with the real
// disruption controller): it starts the operator and agents, creates nodes,
// pools and pods, and leaves the API server empty when the test ends.
type cluster struct {
	t      testing.TB
	ctx    context.Context
	c      client.Client // admin
	gate   *gate
	cancel context.CancelFunc
	reg    *prometheus.Registry // the latest started operator's metrics
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	testenv.Require(t, envMissing)
	ctx, cancel := context.WithCancel(context.Background())
	cl := &cluster{t: t, ctx: ctx, c: env.Client, gate: newGate(), cancel: cancel}
	t.Cleanup(func() {
		cl.gate.openAll()
		cancel()
		cl.wipe()
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}
	if err := cl.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return cl
}

// wipe deletes everything a test created, so the next test starts empty.
func (cl *cluster) wipe() {
	ctx := context.Background()
	zero := client.GracePeriodSeconds(0)
	_ = cl.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(testNS), zero)
	_ = cl.c.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace(testNS))
	_ = cl.c.DeleteAllOf(ctx, &v1alpha1.NetshiftNodePool{})
	_ = cl.c.DeleteAllOf(ctx, &v1alpha1.NetshiftNetwork{})
	_ = cl.c.DeleteAllOf(ctx, &corev1.Node{})
	_ = cl.c.DeleteAllOf(ctx, &v1alpha1.NetshiftNodeState{})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var pods corev1.PodList
		var nns v1alpha1.NetshiftNodeStateList
		_ = cl.c.List(ctx, &pods, client.InNamespace(testNS))
		_ = cl.c.List(ctx, &nns)
		if len(pods.Items) == 0 && len(nns.Items) == 0 {
			return
		}
		_ = cl.c.DeleteAllOf(ctx, &v1alpha1.NetshiftNodeState{})
		time.Sleep(50 * time.Millisecond)
	}
	cl.t.Errorf("cleanup: objects left after 30s")
}

// startOperator runs the operator with its ServiceAccount's permissions.
func (cl *cluster) startOperator() (stop func(), reg *prometheus.Registry) {
	return cl.startOperatorWith(env.OperatorConfig())
}

func (cl *cluster) startOperatorWith(cfg *rest.Config) (stop func(), reg *prometheus.Registry) {
	cl.t.Helper()
	reg = prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(cl.ctx)
	mgr, err := operator.NewManager(ctx, cfg, operator.Options{
		MetricsAddr: "0", HealthAddr: "0", LeaderElection: true,
		LeaderElectionID: "netshift-operator", LeaderElectionNS: operator.Namespace,
		EvictionRetry: 200 * time.Millisecond, AdmissionSettle: 300 * time.Millisecond, Registry: reg, ManyInProcess: true,
	})
	if err != nil {
		cl.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			cl.t.Errorf("operator: %v", err)
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	cl.t.Cleanup(stop)
	cl.reg = reg // the latest operator's, which waitPasses reads
	return stop, reg
}

// startAgents runs one agent per node, each with its node-bound ServiceAccount
// identity; Reconfigure work waits at the test's gate.
func (cl *cluster) startAgents(nodes ...string) {
	cl.startAgentsWith(env.AgentConfig, nodes...)
}

func (cl *cluster) startAgentsWith(cfgFor func(node string) *rest.Config, nodes ...string) {
	cl.t.Helper()
	for _, n := range nodes {
		mgr, err := agent.NewManager(cfgFor(n), agent.Options{Node: n, HealthAddr: "0", ManyInProcess: true, NewPlugin: ofItsOwn,
			Work: map[v1alpha1.OperationKind]agent.Work{
				v1alpha1.OperationReconfigure: func(ctx context.Context, node string, _ v1alpha1.NodeOperation) error {
					return cl.gate.wait(ctx, node)
				},
			}})
		if err != nil {
			cl.t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(cl.ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(ctx) }()
		cl.t.Cleanup(func() { cancel(); <-done })
	}
}

func (cl *cluster) createNodes(names ...string) {
	cl.t.Helper()
	for _, n := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}}
		if err := cl.c.Create(cl.ctx, node); err != nil {
			cl.t.Fatal(err)
		}
		cl.setReady(n, true, time.Now())
	}
	cl.eventually(30*time.Second, "a NetshiftNodeState for every node", func() bool {
		for _, n := range names {
			if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: n}, &v1alpha1.NetshiftNodeState{}); err != nil {
				return false
			}
		}
		return true
	})
}

func (cl *cluster) createPool(name string, priority int32, maxParallel intstr.IntOrString, nodes ...string) {
	cl.t.Helper()
	np := &v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NetshiftNodePoolSpec{
		Priority: ptr.To(priority), MaxParallel: &maxParallel,
		NodeSelectorTerms: []v1alpha1.NodeSelectorTerm{{MatchExpressions: []v1alpha1.NodeSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: nodes}}}},
	}}
	if err := cl.c.Create(cl.ctx, np); err != nil {
		cl.t.Fatal(err)
	}
}

// createPods puts n started pods with the given labels on node; with no
// kubelet to stop them, an eviction removes them at once (a zero grace period).
func (cl *cluster) createPods(node string, n int, lbls map[string]string) {
	cl.t.Helper()
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-pod-%d", node, i), Namespace: testNS, Labels: lbls},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if err := controlplane.CreateStartedPod(cl.ctx, cl.c, p); err != nil {
			cl.t.Fatal(err)
		}
	}
}

// startOperation writes a Reconfigure operation into each node's plan, as
// `netshift reconfigure` does.
func (cl *cluster) startOperation(id string, nodes ...string) {
	cl.t.Helper()
	if err := operator.StartOperation(cl.ctx, cl.c, v1alpha1.NodeOperation{ID: id, Kind: v1alpha1.OperationReconfigure}, nodes); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *cluster) state(node string) v1alpha1.NetshiftNodeStateStatus {
	cl.t.Helper()
	var nns v1alpha1.NetshiftNodeState
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: node}, &nns); err != nil {
		cl.t.Fatal(err)
	}
	return nns.Status
}

func (cl *cluster) node(name string) *corev1.Node {
	cl.t.Helper()
	var n corev1.Node
	if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: name}, &n); err != nil {
		cl.t.Fatal(err)
	}
	return &n
}

// finished reports whether the node's operation is over and its slot released.
func (cl *cluster) finished(node, op string) bool { return isFinished(cl.state(node), op) }

func isFinished(s v1alpha1.NetshiftNodeStateStatus, op string) bool {
	return s.SyncOperation == op && (s.SyncStatus == v1alpha1.SyncSucceeded || s.SyncStatus == v1alpha1.SyncFailed) &&
		s.DrainStatus == v1alpha1.DrainIdle
}

// waitFinished waits until every node's agent finished op and its slot is
// released; on timeout it says where each unfinished node stands. Four
// minutes: an operator that takes over waits out its predecessor's lease, and
// a cold CI machine runs a lab beside these tests.
func (cl *cluster) waitFinished(op string, nodes ...string) {
	cl.t.Helper()
	var left []string
	cl.eventually(4*time.Minute, fmt.Sprintf("operation %s finished on %d nodes", op, len(nodes)), func() bool {
		var list v1alpha1.NetshiftNodeStateList
		if err := cl.c.List(cl.ctx, &list); err != nil {
			return false
		}
		byName := map[string]v1alpha1.NetshiftNodeStateStatus{}
		for _, n := range list.Items {
			byName[n.Name] = n.Status
		}
		left = left[:0]
		for _, n := range nodes {
			if s := byName[n]; !isFinished(s, op) {
				left = append(left, fmt.Sprintf("%s (drain %q %q, sync %q of %q)", n, s.DrainStatus, s.DrainMessage, s.SyncStatus, s.SyncOperation))
			}
		}
		return len(left) == 0
	}, func() string { return "not finished: " + strings.Join(left, "; ") })
}

// eventually waits until cond holds; on timeout it fails the test with what
// it waited for and, if given, what explain says of where things stand.
func (cl *cluster) eventually(timeout time.Duration, what string, cond func() bool, explain ...func() string) {
	cl.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			for _, e := range explain {
				what += ": " + e()
			}
			cl.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdingSlot lists the nodes that hold a slot now, sorted.
func (cl *cluster) holdingSlot() []string {
	var list v1alpha1.NetshiftNodeStateList
	if err := cl.c.List(cl.ctx, &list); err != nil {
		cl.t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		if rollout.HoldsSlot(n.Status.DrainStatus) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// gate holds each node's Reconfigure work until the test opens it.
type gate struct {
	mu      sync.Mutex
	open    map[string]bool
	all     bool
	changed chan struct{}
}

func newGate() *gate { return &gate{open: map[string]bool{}, changed: make(chan struct{})} }

func (g *gate) wait(ctx context.Context, node string) error {
	for {
		g.mu.Lock()
		ok, ch := g.all || g.open[node], g.changed
		g.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *gate) release(nodes ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range nodes {
		g.open[n] = true
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gate) openAll() {
	g.mu.Lock()
	g.all = true
	g.mu.Unlock()
	g.release()
}

// slotWatch follows every change of every NetshiftNodeState in the order the
// API server made them, and records the most nodes of each pool that held a
// slot at the same moment, and the order in which nodes were granted one.
type slotWatch struct {
	mu       sync.Mutex
	owner    map[string]string
	status   map[string]v1alpha1.DrainStatus
	peak     map[string]int
	admitted []string
	cancel   context.CancelFunc
}

func (cl *cluster) watchSlots(owner map[string]string) *slotWatch {
	cl.t.Helper()
	wc, err := client.NewWithWatch(env.Admin, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		cl.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(cl.ctx)
	w, err := wc.Watch(ctx, &v1alpha1.NetshiftNodeStateList{})
	if err != nil {
		cl.t.Fatal(err)
	}
	sw := &slotWatch{owner: owner, status: map[string]v1alpha1.DrainStatus{}, peak: map[string]int{}, cancel: cancel}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			nns, ok := ev.Object.(*v1alpha1.NetshiftNodeState)
			if !ok {
				continue
			}
			sw.observe(nns.Name, nns.Status.DrainStatus, ev.Type == watch.Deleted)
		}
	}()
	cl.t.Cleanup(cancel)
	return sw
}

func (sw *slotWatch) observe(node string, s v1alpha1.DrainStatus, deleted bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	before := sw.status[node]
	if deleted {
		s = ""
	}
	sw.status[node] = s
	if !rollout.HoldsSlot(before) && rollout.HoldsSlot(s) {
		sw.admitted = append(sw.admitted, node)
	}
	holding := map[string]int{}
	for n, st := range sw.status {
		if rollout.HoldsSlot(st) {
			holding[sw.owner[n]]++
		}
	}
	for p, h := range holding {
		sw.peak[p] = max(sw.peak[p], h)
	}
}

func (sw *slotWatch) peaks() map[string]int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	out := map[string]int{}
	for k, v := range sw.peak {
		out[k] = v
	}
	return out
}

func (sw *slotWatch) admissions() []string {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return append([]string(nil), sw.admitted...)
}

// planWaves is what `netshift plan --only nodes` computes from the cluster.
func (cl *cluster) planWaves(nodes ...string) [][]string {
	cl.t.Helper()
	var nl corev1.NodeList
	var pl v1alpha1.NetshiftNodePoolList
	if err := cl.c.List(cl.ctx, &nl); err != nil {
		cl.t.Fatal(err)
	}
	if err := cl.c.List(cl.ctx, &pl); err != nil {
		cl.t.Fatal(err)
	}
	m, err := operator.Membership(nl.Items, pl.Items)
	if err != nil {
		cl.t.Fatal(err)
	}
	return m.Waves(nodes)
}

// update changes an object as a user would: read, change, write, and again
// on a conflict with the controllers' writes.
func (cl *cluster) update(obj client.Object, change func(client.Object)) {
	cl.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.c.Get(cl.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return cl.c.Update(cl.ctx, obj)
	})
	if err != nil {
		cl.t.Fatal(err)
	}
}

// waitPasses waits until the drain controller has completed n more passes
// (its netshift_drain_passes_total counter), each starting after this call:
// what a pass would decide from the state now is then written. Passes repeat
// on their own while a node waits in Drain_Required (every settle period).
func (cl *cluster) waitPasses(n int) {
	cl.t.Helper()
	passes := func() float64 { return testenv.Counter(cl.t, cl.reg, "netshift_drain_passes_total") }
	// A pass in progress now may have read the state before the event: it does not count.
	want := passes() + float64(n) + 1
	cl.eventually(30*time.Second, fmt.Sprintf("%d drain passes", n), func() bool { return passes() >= want })
}

// setReady sets node n's Ready condition, as its kubelet (or, once it is
// silent, the node lifecycle controller) would, changed at since.
func (cl *cluster) setReady(n string, ready bool, since time.Time) {
	cl.t.Helper()
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionUnknown
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var node corev1.Node
		if err := cl.c.Get(cl.ctx, client.ObjectKey{Name: n}, &node); err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
		return cl.c.Status().Update(cl.ctx, &node)
	})
	if err != nil {
		cl.t.Fatalf("node %s: set Ready %v: %v", n, ready, err)
	}
}
