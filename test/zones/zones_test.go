// Package zones tests the operator's zone controller against a real API
// server, through every transition of the design. The agents' part (moving a
// node's ovn-controller and then annotating the node) is played by the test:
// it annotates a node when the operator asks its agent for a zone.
package zones

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/testenv"
	"netshift.io/netshift/internal/zones"
)

var (
	env        *testenv.Env
	envMissing error
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, &envMissing)) }

// central records what the operator asked of the central side.
type central struct {
	mu    sync.Mutex
	calls []string
}

func (c *central) Ensure(context.Context) error { c.add("ensure"); return nil }
func (c *central) Retire(context.Context) error { c.add("retire"); return nil }
func (c *central) add(s string)                 { c.mu.Lock(); c.calls = append(c.calls, s); c.mu.Unlock() }
func (c *central) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

type cluster struct {
	t       *testing.T
	ctx     context.Context
	c       client.Client
	central *central
	// moves are the node moves the agents made, in order.
	mu    sync.Mutex
	moves []string
	down  map[string]bool
	// stalled nodes' agents do nothing (restarting, or slow).
	stalled map[string]bool
	// stopOperator stops the running operator.
	stopOperator func()
	// reg is the running operator's metrics (its zone passes).
	reg *prometheus.Registry
	// agentRounds counts the agents' rounds over every node.
	agentRounds atomic.Int64
}

// setup empties the cluster of nodes and the ConfigMap, creates nodes with
// zone annotations (a name "own" means the node's own zone, "" none), and
// runs the operator and the stand-in agents until the test ends.
func setup(t *testing.T, zonesOf []string, cm map[string]string) *cluster {
	t.Helper()
	testenv.Require(t, envMissing)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cl := &cluster{t: t, ctx: ctx, c: env.Client, central: &central{}, down: map[string]bool{}, stalled: map[string]bool{}}
	_ = cl.c.DeleteAllOf(ctx, &corev1.Node{})
	_ = cl.c.DeleteAllOf(ctx, &v1alpha1.NodeNetworkState{})
	_ = cl.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName}})
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operator.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cn := &v1alpha1.ClusterNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterNetworkName}}
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(cn), cn); err == nil {
		cn.Status.Zones = nil
		if err := cl.c.Status().Update(ctx, cn); err != nil {
			t.Fatal(err)
		}
	} else {
		cn.Spec.MTU = ptr.To[int32](1400) // required; the zone rollout does not look at it
		if err := cl.c.Create(ctx, cn); err != nil {
			t.Fatal(err)
		}
	}
	for i, z := range zonesOf {
		name := fmt.Sprintf("z%d", i+1)
		if z == "own" {
			z = name
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if z != "" {
			n.Annotations = map[string]string{zones.ZoneAnnotation: z}
		}
		if err := cl.c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		cl.setReady(name, true)
	}
	if cm != nil {
		if err := cl.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName}, Data: cm}); err != nil {
			t.Fatal(err)
		}
	}
	cl.stopOperator = cl.startOperator()
	t.Cleanup(cl.stopOperator)
	go cl.agents()
	return cl
}

// startOperator runs an operator until the returned stop is called (or the
// test ends); stop returns once it has exited, as a killed pod's would.
func (cl *cluster) startOperator() (stop func()) {
	cl.t.Helper()
	ctx, cancel := context.WithCancel(cl.ctx)
	cl.reg = prometheus.NewRegistry()
	mgr, err := operator.NewManager(ctx, env.OperatorConfig(), operator.Options{MetricsAddr: "0", HealthAddr: "0", TimeAddr: "0",
		ManyInProcess: true, ZoneMigration: true, Central: cl.central, Registry: cl.reg})
	if err != nil {
		cl.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	return sync.OnceFunc(func() { cancel(); <-done })
}

func (cl *cluster) setReady(name string, ready bool) {
	cl.t.Helper()
	var n corev1.Node
	if err := cl.c.Get(cl.ctx, types.NamespacedName{Name: name}, &n); err != nil {
		cl.t.Fatal(err)
	}
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := cl.c.Status().Update(cl.ctx, &n); err != nil {
		cl.t.Fatal(err)
	}
	cl.mu.Lock()
	cl.down[name] = !ready
	cl.mu.Unlock()
}

// agents plays every node's agent: a node asked for a zone is annotated with
// it (unless the node is down), and the node must be cordoned meanwhile.
func (cl *cluster) agents() {
	for cl.ctx.Err() == nil {
		var states v1alpha1.NodeNetworkStateList
		if cl.c.List(cl.ctx, &states) == nil {
			for _, s := range states.Items {
				var n corev1.Node
				if s.Spec.Zone == "" || cl.c.Get(cl.ctx, types.NamespacedName{Name: s.Name}, &n) != nil || n.Annotations[zones.ZoneAnnotation] == s.Spec.Zone {
					continue
				}
				cl.mu.Lock()
				down := cl.down[s.Name] || cl.stalled[s.Name]
				cl.mu.Unlock()
				if down {
					continue
				}
				if !n.Spec.Unschedulable {
					cl.t.Errorf("node %s asked to move to %s but not cordoned", n.Name, s.Spec.Zone)
				}
				patch := client.MergeFrom(n.DeepCopy())
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[zones.ZoneAnnotation] = s.Spec.Zone
				if cl.c.Patch(cl.ctx, &n, patch) == nil {
					cl.mu.Lock()
					cl.moves = append(cl.moves, n.Name+"->"+s.Spec.Zone)
					cl.mu.Unlock()
				}
			}
		}
		cl.agentRounds.Add(1)
		time.Sleep(30 * time.Millisecond)
	}
}

// agentsCaughtUp waits for two more rounds of the agents: whatever they would
// do about the state now is done.
func (cl *cluster) agentsCaughtUp() {
	cl.t.Helper()
	want := cl.agentRounds.Load() + 2
	for deadline := time.Now().Add(10 * time.Second); cl.agentRounds.Load() < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cl.t.Fatal("the agents stopped going round")
		}
	}
}

// operatorCaughtUp waits until the zone controller has decided on the state
// now, and the agents have carried out what it asked: twice it nudges the
// ClusterNetwork (an annotation, which the controller watches) and waits for
// a pass to complete after each, so the second pass started after the call.
func (cl *cluster) operatorCaughtUp() {
	cl.t.Helper()
	passes := func() float64 { return testenv.Counter(cl.t, cl.reg, "netshift_zone_passes_total") }
	for i := 0; i < 2; i++ {
		want := passes() + 1
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test.netshift.io/nudge":"%d"}}}`, time.Now().UnixNano()))
		if err := cl.c.Patch(cl.ctx, &v1alpha1.ClusterNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterNetworkName}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			cl.t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); passes() < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cl.t.Fatal("the zone controller made no pass in 30 s")
			}
		}
	}
	cl.agentsCaughtUp()
}

func (cl *cluster) stall(node string, stalled bool) {
	cl.mu.Lock()
	cl.stalled[node] = stalled
	cl.mu.Unlock()
}

// waitAsked waits until the operator has cordoned node and asked its agent
// to move it into zone.
func (cl *cluster) waitAsked(node, zone string) {
	cl.t.Helper()
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var s v1alpha1.NodeNetworkState
		var n corev1.Node
		return cl.c.Get(ctx, types.NamespacedName{Name: node}, &s) == nil && s.Spec.Zone == zone &&
			cl.c.Get(ctx, types.NamespacedName{Name: node}, &n) == nil && n.Spec.Unschedulable, nil
	})
	if err != nil {
		cl.t.Fatalf("node %s was never cordoned and asked to move to %s (moves %v)", node, zone, cl.movesSoFar())
	}
}

// waitMoved waits until the agents have moved node into zone.
func (cl *cluster) waitMoved(node, zone string) {
	cl.t.Helper()
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(cl.movesSoFar(), node+"->"+zone), nil
	})
	if err != nil {
		cl.t.Fatalf("node %s never moved to %s (moves %v)", node, zone, cl.movesSoFar())
	}
}

// waitConverged waits until status.zones says Converged with the layout.
func (cl *cluster) waitConverged(layout zones.Mode) *v1alpha1.ZonesStatus {
	cl.t.Helper()
	var st *v1alpha1.ZonesStatus
	err := wait.PollUntilContextTimeout(cl.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var cn v1alpha1.ClusterNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterNetworkName}, &cn); err != nil {
			return false, err
		}
		st = cn.Status.Zones
		return st != nil && st.Current == string(layout) && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ZonesConverged), nil
	})
	if err != nil {
		cl.t.Fatalf("not converged to %s: %+v (moves %v, central %v)", layout, st, cl.movesSoFar(), cl.central.list())
	}
	return st
}

func (cl *cluster) movesSoFar() []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return slices.Clone(cl.moves)
}

func (cl *cluster) configMap() (map[string]string, bool) {
	var cm corev1.ConfigMap
	err := cl.c.Get(cl.ctx, types.NamespacedName{Namespace: operator.Namespace, Name: zones.ConfigMapName}, &cm)
	if err != nil {
		return nil, false
	}
	return cm.Data, true
}

func (cl *cluster) uncordonedAll() {
	cl.t.Helper()
	err := wait.PollUntilContextTimeout(cl.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		if err := cl.c.List(ctx, &nodes); err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if n.Spec.Unschedulable {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		cl.t.Errorf("a node stayed cordoned after its move")
	}
}

func TestFreshInstallIsMultizoneAndChangesNothing(t *testing.T) {
	cl := setup(t, []string{"own", "own", "own"}, nil)
	st := cl.waitConverged(zones.Multi)
	cl.operatorCaughtUp()
	if m := cl.movesSoFar(); len(m) != 0 || len(cl.central.list()) != 0 || st.Central != "Retired" {
		t.Errorf("a fresh multizone install moved %v, central %v (%s)", m, cl.central.list(), st.Central)
	}
	if _, ok := cl.configMap(); ok {
		t.Errorf("a ConfigMap was written")
	}
}

func TestLegacyToMultizoneThroughSingleZone(t *testing.T) {
	cl := setup(t, []string{"", "", ""}, nil)
	// The operator records the intermediate step first.
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		data, ok := cl.configMap()
		if ok && (data[zones.KeyZoneMode] != "singlezone" || data[zones.KeyDefinitive] != "no") {
			return false, fmt.Errorf("intermediate ConfigMap %v", data)
		}
		return ok || len(cl.movesSoFar()) > 3, nil
	})
	if err != nil {
		t.Fatalf("the single-zone step was not recorded: %v", err)
	}
	cl.waitConverged(zones.Multi)
	moves := cl.movesSoFar()
	want := []string{"z1->global", "z2->global", "z3->global", "z1->z1", "z2->z2", "z3->z3"}
	if !slices.Equal(moves, want) {
		t.Errorf("moves %v, want %v (one at a time: the implicit pool's limit is 1)", moves, want)
	}
	if got := cl.central.list(); !slices.Equal(got, []string{"retire"}) {
		t.Errorf("central side %v, want retire at the end", got)
	}
	if _, ok := cl.configMap(); ok {
		t.Errorf("the intermediate ConfigMap is still there after the upgrade")
	}
	cl.uncordonedAll()
}

// The operator stopped in the middle of the upgrade, twice, each time with a
// node cordoned and asked to move (its agent slow to act), and a new one
// started: it resumes from what the API server holds. No node moves twice,
// the order is the same, the central side is retired once, at the end, and
// no node is left cordoned.
func TestAnOperatorRestartedMidUpgradeResumes(t *testing.T) {
	cl := setup(t, []string{"", "", ""}, nil)
	for _, zone := range []string{"global", "z2"} {
		cl.stall("z2", true)
		cl.waitAsked("z2", zone)
		cl.stopOperator()
		cl.stall("z2", false)
		cl.waitMoved("z2", zone)
		cl.agentsCaughtUp() // no operator: nothing else moves
		if m := cl.movesSoFar(); m[len(m)-1] != "z2->"+zone {
			t.Fatalf("a node moved with no operator running: %v", m)
		}
		cl.stopOperator = cl.startOperator()
		t.Cleanup(cl.stopOperator)
	}
	cl.waitConverged(zones.Multi)
	want := []string{"z1->global", "z2->global", "z3->global", "z1->z1", "z2->z2", "z3->z3"}
	if moves := cl.movesSoFar(); !slices.Equal(moves, want) {
		t.Errorf("moves %v, want %v", moves, want)
	}
	if got := cl.central.list(); !slices.Equal(got, []string{"retire"}) {
		t.Errorf("central side %v, want retire once at the end", got)
	}
	if _, ok := cl.configMap(); ok {
		t.Errorf("the intermediate ConfigMap is still there after the upgrade")
	}
	cl.uncordonedAll()
}

func TestDefinitiveSingleZoneStopsTheUpgrade(t *testing.T) {
	cfg := map[string]string{zones.KeyZoneMode: "singlezone", zones.KeyDefinitive: "yes"}
	cl := setup(t, []string{"", ""}, cfg)
	cl.waitConverged(zones.Single)
	cl.operatorCaughtUp()
	if moves := cl.movesSoFar(); !slices.Equal(moves, []string{"z1->global", "z2->global"}) {
		t.Errorf("moves %v", moves)
	}
	if data, ok := cl.configMap(); !ok || data[zones.KeyDefinitive] != "yes" {
		t.Errorf("the user's ConfigMap was not kept: %v", data)
	}
	if len(cl.central.list()) != 0 {
		t.Errorf("central %v", cl.central.list())
	}
}

func TestMultizoneToSingleByCreatingTheConfigMapAndBackByDeletingIt(t *testing.T) {
	cl := setup(t, []string{"own", "own"}, nil)
	cl.waitConverged(zones.Multi)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName},
		Data: map[string]string{zones.KeyZoneMode: "singlezone"}}
	if err := cl.c.Create(cl.ctx, cm); err != nil {
		t.Fatal(err)
	}
	cl.waitConverged(zones.Single)
	if got := cl.central.list(); !slices.Equal(got, []string{"ensure"}) {
		t.Errorf("towards single zone the central side comes first: %v", got)
	}
	cl.uncordonedAll()
	if err := cl.c.Delete(cl.ctx, cm); err != nil {
		t.Fatal(err)
	}
	cl.waitConverged(zones.Multi)
	if got := cl.central.list(); !slices.Equal(got, []string{"ensure", "retire"}) {
		t.Errorf("central %v", got)
	}
	want := []string{"z1->global", "z2->global", "z1->z1", "z2->z2"}
	if moves := cl.movesSoFar(); !slices.Equal(moves, want) {
		t.Errorf("moves %v, want %v", moves, want)
	}
}

func TestUndefinedConverges(t *testing.T) {
	cl := setup(t, []string{"global", "own", "elsewhere"}, nil)
	cl.waitConverged(zones.Multi)
	if moves := cl.movesSoFar(); !slices.Equal(moves, []string{"z1->z1", "z3->z3"}) {
		t.Errorf("moves %v", moves)
	}
}

func TestInvalidValuesChangeNothing(t *testing.T) {
	cl := setup(t, []string{"global", "global"}, map[string]string{zones.KeyZoneMode: "zoned"})
	var st *v1alpha1.ZonesStatus
	err := wait.PollUntilContextTimeout(cl.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var cn v1alpha1.ClusterNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterNetworkName}, &cn); err != nil {
			return false, err
		}
		st = cn.Status.Zones
		return st != nil && meta.IsStatusConditionFalse(st.Conditions, v1alpha1.ZonesConfigValid), nil
	})
	if err != nil {
		t.Fatalf("no ConfigValid=False: %+v", st)
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ZonesConfigValid)
	if !strings.Contains(c.Message, `zone-mode: "zoned" is not singlezone or multizone`) || st.Phase != "InvalidConfig" || st.Current != "singlezone" {
		t.Errorf("status %+v, condition %+v", st, c)
	}
	cl.operatorCaughtUp()
	if len(cl.movesSoFar()) != 0 || len(cl.central.list()) != 0 {
		t.Errorf("an invalid ConfigMap changed something: %v %v", cl.movesSoFar(), cl.central.list())
	}
	// Fixed: the rollout goes on (here: to single zone, which it is).
	var cm corev1.ConfigMap
	if err := cl.c.Get(cl.ctx, types.NamespacedName{Namespace: operator.Namespace, Name: zones.ConfigMapName}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[zones.KeyZoneMode] = "singlezone"
	if err := cl.c.Update(cl.ctx, &cm); err != nil {
		t.Fatal(err)
	}
	cl.waitConverged(zones.Single)
}

func TestADownNodeHoldsTheRollout(t *testing.T) {
	cl := setup(t, []string{"global", "global", "global"}, nil)
	cl.setReady("z2", false)
	var st *v1alpha1.ZonesStatus
	err := wait.PollUntilContextTimeout(cl.ctx, 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		var cn v1alpha1.ClusterNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterNetworkName}, &cn); err != nil {
			return false, err
		}
		st = cn.Status.Zones
		return st != nil && st.Phase == "Holding" && len(cl.movesSoFar()) == 2, nil
	})
	if err != nil {
		t.Fatalf("not holding: %+v moves %v", st, cl.movesSoFar())
	}
	if !strings.Contains(st.Message, "z2") || len(cl.central.list()) != 0 {
		t.Errorf("holding without naming the node, or retired the central side: %+v %v", st, cl.central.list())
	}
	cl.setReady("z2", true)
	cl.waitConverged(zones.Multi)
	if got := cl.central.list(); !slices.Equal(got, []string{"retire"}) {
		t.Errorf("central %v", got)
	}
}
