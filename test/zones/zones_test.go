// Package zones tests the operator's zone controller against a real API
// server, through every transition of the design. What the API server alone
// does not run is played by the test: the network plugin's DaemonSet (a
// deleted plugin pod is finalized, as its kubelet would, and a new one
// created), its pods (one reads its node's zone label when it starts, moves
// the node and annotates it, then reports ready; it leaves the mark of a
// node's leaving the central zone to the operator, which OVN-Kubernetes v1.1
// sets only most of a second later, and a node whose mark does not follow
// its zone fails the test), and the Deployment controller of the plugin's
// central side (its status follows its replicas).
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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
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

const pluginNS = "ovn-kubernetes"

var pluginLabels = map[string]string{"app": "ovnkube-node"}

type cluster struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	// moves are the node moves the plugin pods made, in order; central the
	// central side's starts and retirements.
	mu      sync.Mutex
	moves   []string
	movedAt []time.Time
	central []string
	down    map[string]bool
	// stalled nodes' plugin pods never become ready (a slow start, or a hang);
	// crashing ones crash-loop.
	stalled, crashing map[string]bool
	// stopOperator stops the running operator.
	stopOperator func()
	// reg is the running operator's metrics (its zone passes).
	reg *prometheus.Registry
	// rounds counts the stand-in plugin's rounds over every node.
	rounds atomic.Int64
	// moveTimeout is the operator's --zone-move-timeout, settle its --zone-move-settle.
	moveTimeout, settle time.Duration
	ds                  *appsv1.DaemonSet
}

// setup empties the cluster of nodes and the ConfigMap, creates nodes with
// zone annotations (a name "own" means the node's own zone, "" none) and the
// matching labels, the plugin's DaemonSet and central Deployment (running
// unless every node is in its own zone), and runs the operator and the
// stand-ins until the test ends.
func setup(t *testing.T, zonesOf []string, cm map[string]string, tweaks ...func(*cluster)) *cluster {
	t.Helper()
	testenv.Require(t, envMissing)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cl := &cluster{t: t, ctx: ctx, c: env.Client, down: map[string]bool{}, stalled: map[string]bool{}, crashing: map[string]bool{},
		moveTimeout: 20 * time.Second}
	_ = cl.c.DeleteAllOf(ctx, &corev1.Node{})
	_ = cl.c.DeleteAllOf(ctx, &v1alpha1.NetshiftNodeState{})
	_ = cl.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(pluginNS), client.GracePeriodSeconds(0))
	_ = cl.c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(pluginNS))
	_ = cl.c.DeleteAllOf(ctx, &appsv1.DaemonSet{}, client.InNamespace(pluginNS))
	_ = cl.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName}})
	for _, ns := range []string{operator.Namespace, pluginNS} {
		if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}}
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
	allOwn := true
	for i, z := range zonesOf {
		name := fmt.Sprintf("z%d", i+1)
		if z == "own" {
			z = name
		}
		allOwn = allOwn && z == name
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if z != "" {
			n.Annotations = map[string]string{zones.ZoneAnnotation: z}
			n.Labels = map[string]string{zones.ZoneLabel: z}
		}
		if z != "" && z != zones.GlobalZone {
			n.Annotations[zones.RemoteZoneMigrated] = z // as its plugin pod marked it when it started there
		}
		if err := cl.c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		cl.setReady(name, true)
	}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pluginLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ovnkube-node", Image: "plugin"}}}}
	cl.ds = &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ovnkube-node", Namespace: pluginNS},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: pluginLabels}, Template: template}}
	central := template.DeepCopy()
	central.Labels = map[string]string{"app": "ovnkube-central"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "ovnkube-central", Namespace: pluginNS},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: central.Labels}, Template: *central}}
	if allOwn && len(zonesOf) > 0 {
		dep.Spec.Replicas = ptr.To[int32](0)
	}
	for _, o := range []client.Object{cl.ds, dep} {
		if err := cl.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cl.deploymentController(false)
	for i := range zonesOf {
		cl.plugin(fmt.Sprintf("z%d", i+1)) // every node's first plugin pod
	}
	if cm != nil {
		if err := cl.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName}, Data: cm}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tweak := range tweaks {
		tweak(cl)
	}
	cl.stopOperator = cl.startOperator()
	t.Cleanup(cl.stopOperator)
	go cl.standIns()
	return cl
}

// startOperator runs an operator until the returned stop is called (or the
// test ends); stop returns once it has exited, as a killed pod's would.
func (cl *cluster) startOperator() (stop func()) {
	cl.t.Helper()
	ctx, cancel := context.WithCancel(cl.ctx)
	cl.reg = prometheus.NewRegistry()
	o := operator.DefaultOptions()
	mgr, err := operator.NewManager(ctx, env.OperatorConfig(), operator.Options{MetricsAddr: "0", HealthAddr: "0", TimeAddr: "0",
		ManyInProcess: true, ZoneMigration: true, Registry: cl.reg,
		ZonePluginNamespace: pluginNS, ZonePluginPods: "app=ovnkube-node", ZoneCentral: "ovnkube-central", ZoneCentralReplicas: 1,
		ZoneMoveTimeout: cl.moveTimeout, ZoneMoveSettle: cl.settle, AnswerTimeout: o.AnswerTimeout})
	if err != nil {
		cl.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	return sync.OnceFunc(func() { cancel(); <-done })
}

// standIns play the DaemonSet, the kubelets, the plugin pods and the
// Deployment controller until the test ends.
func (cl *cluster) standIns() {
	for cl.ctx.Err() == nil {
		var nodes corev1.NodeList
		if cl.c.List(cl.ctx, &nodes) == nil {
			for _, n := range nodes.Items {
				cl.plugin(n.Name)
			}
		}
		cl.deploymentController(true)
		cl.rounds.Add(1)
		time.Sleep(30 * time.Millisecond)
	}
}

// plugin plays node's share of the DaemonSet, its kubelet and its plugin pod:
// a deleted pod is gone at once (the kubelet confirms), a missing one is
// created, and a new pod reads the node's zone label, moves the node (the
// annotation; a node that is down does nothing, a stalled one never gets
// ready, a crashing one crash-loops) and becomes ready.
func (cl *cluster) plugin(node string) {
	var pods corev1.PodList
	if cl.c.List(cl.ctx, &pods, client.InNamespace(pluginNS), client.MatchingLabels(pluginLabels)) != nil {
		return
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case p.Spec.NodeName != node:
		case p.DeletionTimestamp != nil:
			_ = cl.c.Delete(cl.ctx, p, client.GracePeriodSeconds(0))
		default:
			pod = p
		}
	}
	cl.mu.Lock()
	down, stalled, crashing := cl.down[node], cl.stalled[node], cl.crashing[node]
	cl.mu.Unlock()
	if down {
		return
	}
	if pod == nil {
		pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "ovnkube-node-", Namespace: pluginNS, Labels: pluginLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: cl.ds.Name, UID: cl.ds.UID, Controller: ptr.To(true)}}},
			Spec: *cl.ds.Spec.Template.Spec.DeepCopy()}
		pod.Spec.NodeName = node
		if cl.c.Create(cl.ctx, pod) != nil {
			return
		}
	}
	if podReady(pod) {
		return // started: it read its label then
	}
	switch {
	case crashing:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ovnkube-node", RestartCount: 3,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "cannot reach the zone's databases"}}}}
		_ = cl.c.Status().Update(cl.ctx, pod)
		return
	case stalled:
		return
	}
	var n corev1.Node
	if cl.c.Get(cl.ctx, types.NamespacedName{Name: node}, &n) != nil {
		return
	}
	if zone := n.Labels[zones.ZoneLabel]; zone != "" && n.Annotations[zones.ZoneAnnotation] != zone {
		if !n.Spec.Unschedulable {
			cl.t.Errorf("node %s labelled for zone %s but not cordoned", node, zone)
		}
		patch := client.MergeFrom(n.DeepCopy())
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[zones.ZoneAnnotation] = zone
		if cl.c.Patch(cl.ctx, &n, patch) != nil {
			return
		}
		cl.mu.Lock()
		cl.moves = append(cl.moves, node+"->"+zone)
		cl.movedAt = append(cl.movedAt, time.Now())
		cl.mu.Unlock()
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = nil
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_ = cl.c.Status().Update(cl.ctx, pod)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deploymentController plays the central Deployment's controller: its status
// follows its replicas, and each change is recorded as a start or retirement.
func (cl *cluster) deploymentController(record bool) {
	var d appsv1.Deployment
	if cl.c.Get(cl.ctx, types.NamespacedName{Namespace: pluginNS, Name: "ovnkube-central"}, &d) != nil {
		return
	}
	want := *d.Spec.Replicas
	if d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == want {
		return
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: want, ReadyReplicas: want, UpdatedReplicas: want, AvailableReplicas: want}
	if cl.c.Status().Update(cl.ctx, &d) == nil && record && d.Generation > 1 {
		cl.mu.Lock()
		cl.central = append(cl.central, map[bool]string{true: "ensure", false: "retire"}[want > 0])
		cl.mu.Unlock()
	}
}

func (cl *cluster) centralCalls() []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return slices.Clone(cl.central)
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

// standInsCaughtUp waits for two more rounds of the stand-ins: whatever
// they would do about the state now is done.
func (cl *cluster) standInsCaughtUp() {
	cl.t.Helper()
	want := cl.rounds.Load() + 2
	for deadline := time.Now().Add(10 * time.Second); cl.rounds.Load() < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cl.t.Fatal("the stand-ins stopped going round")
		}
	}
}

// operatorCaughtUp waits until the zone controller has decided on the state
// now, and the stand-ins have carried out what it asked: twice it nudges the
// NetshiftNetwork (an annotation, which the controller watches) and waits for
// a pass to complete after each, so the second pass started after the call.
func (cl *cluster) operatorCaughtUp() {
	cl.t.Helper()
	passes := func() float64 { return testenv.Counter(cl.t, cl.reg, "netshift_zone_passes_total") }
	for i := 0; i < 2; i++ {
		want := passes() + 1
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test.netshift.io/nudge":"%d"}}}`, time.Now().UnixNano()))
		if err := cl.c.Patch(cl.ctx, &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			cl.t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); passes() < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cl.t.Fatal("the zone controller made no pass in 30 s")
			}
		}
	}
	cl.standInsCaughtUp()
}

func (cl *cluster) stall(node string, stalled bool) {
	cl.mu.Lock()
	cl.stalled[node] = stalled
	cl.mu.Unlock()
}

// waitAsked waits until the operator has cordoned node and labelled it for
// zone.
func (cl *cluster) waitAsked(node, zone string) {
	cl.t.Helper()
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		return cl.c.Get(ctx, types.NamespacedName{Name: node}, &n) == nil && n.Labels[zones.ZoneLabel] == zone && n.Spec.Unschedulable, nil
	})
	if err != nil {
		cl.t.Fatalf("node %s was never cordoned and asked to move to %s (moves %v)", node, zone, cl.movesSoFar())
	}
}

// waitMoved waits until node's plugin pod has moved it into zone.
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
		var cn v1alpha1.NetshiftNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
			return false, err
		}
		st = cn.Status.Zones
		return st != nil && st.Current == string(layout) && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ZonesConverged), nil
	})
	if err != nil {
		cl.t.Fatalf("not converged to %s: %+v (moves %v, central %v)", layout, st, cl.movesSoFar(), cl.centralCalls())
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
	if m := cl.movesSoFar(); len(m) != 0 || len(cl.centralCalls()) != 0 || st.Central != "Retired" {
		t.Errorf("a fresh multizone install moved %v, central %v (%s)", m, cl.centralCalls(), st.Central)
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
	cl.marksFollowZones()
	moves := cl.movesSoFar()
	want := []string{"z1->global", "z2->global", "z3->global", "z1->z1", "z2->z2", "z3->z3"}
	if !slices.Equal(moves, want) {
		t.Errorf("moves %v, want %v (one at a time: the implicit pool's limit is 1)", moves, want)
	}
	if got := cl.centralCalls(); !slices.Equal(got, []string{"retire"}) {
		t.Errorf("central side %v, want retire at the end", got)
	}
	if _, ok := cl.configMap(); ok {
		t.Errorf("the intermediate ConfigMap is still there after the upgrade")
	}
	cl.uncordonedAll()
}

// The operator stopped in the middle of the upgrade, twice, each time with a
// node cordoned and labelled for its zone (its plugin pod slow to start),
// and a new one started: it resumes from what the API server holds. No node
// moves twice, nothing but that node moves while no operator runs, the order
// is the same, the central side is retired once, at the end, and no node is
// left cordoned.
func TestAnOperatorRestartedMidUpgradeResumes(t *testing.T) {
	cl := setup(t, []string{"", "", ""}, nil)
	for _, zone := range []string{"global", "z2"} {
		cl.stall("z2", true)
		cl.waitAsked("z2", zone)
		cl.stopOperator()
		before := len(cl.movesSoFar())
		cl.stall("z2", false)
		cl.standInsCaughtUp()
		if m := cl.movesSoFar(); len(m) > before && (len(m) > before+1 || m[before] != "z2->"+zone) {
			t.Fatalf("a node other than z2 moved with no operator running: %v", m)
		}
		cl.stopOperator = cl.startOperator()
		t.Cleanup(cl.stopOperator)
		cl.waitMoved("z2", zone)
	}
	cl.waitConverged(zones.Multi)
	want := []string{"z1->global", "z2->global", "z3->global", "z1->z1", "z2->z2", "z3->z3"}
	if moves := cl.movesSoFar(); !slices.Equal(moves, want) {
		t.Errorf("moves %v, want %v", moves, want)
	}
	if got := cl.centralCalls(); !slices.Equal(got, []string{"retire"}) {
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
	if len(cl.centralCalls()) != 0 {
		t.Errorf("central %v", cl.centralCalls())
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
	if got := cl.centralCalls(); !slices.Equal(got, []string{"ensure"}) {
		t.Errorf("towards single zone the central side comes first: %v", got)
	}
	cl.marksFollowZones()
	cl.uncordonedAll()
	if err := cl.c.Delete(cl.ctx, cm); err != nil {
		t.Fatal(err)
	}
	cl.waitConverged(zones.Multi)
	cl.marksFollowZones()
	if got := cl.centralCalls(); !slices.Equal(got, []string{"ensure", "retire"}) {
		t.Errorf("central %v", got)
	}
	want := []string{"z1->global", "z2->global", "z1->z1", "z2->z2"}
	if moves := cl.movesSoFar(); !slices.Equal(moves, want) {
		t.Errorf("moves %v, want %v", moves, want)
	}
}

// marksFollowZones checks that the mark of a node's leaving the central zone
// follows each node's zone, set by the operator: absent from a node its
// plugin annotated in the central zone (which would take it for remote),
// valued with the zone on a node annotated in a zone of its own (the central
// zone would take its pods for its own).
func (cl *cluster) marksFollowZones() {
	cl.t.Helper()
	var nodes corev1.NodeList
	if err := cl.c.List(cl.ctx, &nodes); err != nil {
		cl.t.Fatal(err)
	}
	for _, n := range nodes.Items {
		zone := n.Annotations[zones.ZoneAnnotation]
		mark, left := n.Annotations[zones.RemoteZoneMigrated]
		if (zone == zones.GlobalZone && left) || (zone != zones.GlobalZone && zone != "" && mark != zone) {
			cl.t.Errorf("node %s in zone %q: annotated %s=%q (present %v)", n.Name, zone, zones.RemoteZoneMigrated, mark, left)
		}
	}
}

// TestTheNextMoveWaitsForTheLastToSettle: with --zone-move-settle, a node's
// move starts only that long after the last one ended (the plugin's other
// nodes take the move in meanwhile), and the status says so while it waits.
func TestTheNextMoveWaitsForTheLastToSettle(t *testing.T) {
	const settle = 3 * time.Second
	cl := setup(t, []string{"own", "own", "own"}, map[string]string{zones.KeyZoneMode: "singlezone"}, func(cl *cluster) { cl.settle = settle })
	said := ""
	err := wait.PollUntilContextTimeout(cl.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var cn v1alpha1.NetshiftNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil || cn.Status.Zones == nil {
			return false, err
		}
		if st := cn.Status.Zones; st.Phase == "WaitingForPlugin" && strings.Contains(st.Message, "--zone-move-settle") {
			said = st.Message
		}
		return said != "" && len(cl.movesSoFar()) == 3, nil
	})
	if err != nil {
		t.Fatalf("the status never said a move settles, or not every node moved (said %q, moves %v)", said, cl.movesSoFar())
	}
	cl.waitConverged(zones.Single)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for i := 1; i < len(cl.movedAt); i++ {
		if apart := cl.movedAt[i].Sub(cl.movedAt[i-1]); apart < settle {
			t.Errorf("%s ended %s after %s: the next move did not wait %s", cl.moves[i], apart.Round(time.Millisecond), cl.moves[i-1], settle)
		}
	}
	t.Logf("%v; the status said %q", cl.moves, said)
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
		var cn v1alpha1.NetshiftNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
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
	if len(cl.movesSoFar()) != 0 || len(cl.centralCalls()) != 0 {
		t.Errorf("an invalid ConfigMap changed something: %v %v", cl.movesSoFar(), cl.centralCalls())
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
		var cn v1alpha1.NetshiftNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
			return false, err
		}
		st = cn.Status.Zones
		return st != nil && st.Phase == "Holding" && len(cl.movesSoFar()) == 2, nil
	})
	if err != nil {
		t.Fatalf("not holding: %+v moves %v", st, cl.movesSoFar())
	}
	if !strings.Contains(st.Message, "z2") || len(cl.centralCalls()) != 0 {
		t.Errorf("holding without naming the node, or retired the central side: %+v %v", st, cl.centralCalls())
	}
	cl.setReady("z2", true)
	cl.waitConverged(zones.Multi)
	if got := cl.centralCalls(); !slices.Equal(got, []string{"retire"}) {
		t.Errorf("central %v", got)
	}
}

// A plugin pod that never gets ready, and one that crash-loops, hold the
// rollout where it is safe: each keeps its pool's slot, is named in
// status.zones.held with its reason, and the central side stays up. The
// controller is not blocked meanwhile: raising the pool's maxParallel lets
// the next node start (how soon is logged). Once the pods finish their
// moves the rollout completes.
func TestAPluginPodThatNeverGetsReadyHoldsTheRollout(t *testing.T) {
	cl := setup(t, []string{"global", "global", "global"}, nil, func(cl *cluster) {
		cl.moveTimeout = time.Second
		cl.stall("z1", true)
		cl.crashing["z2"] = true
		pool := &v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: "zones"}, Spec: v1alpha1.NetshiftNodePoolSpec{MaxParallel: ptr.To(intstr.FromInt32(1))}}
		_ = cl.c.Delete(cl.ctx, pool)
		if err := cl.c.Create(cl.ctx, pool); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.c.Delete(context.Background(), pool) })
	})
	st := cl.waitStatus("z1 held as not ready", func(st *v1alpha1.ZonesStatus) bool {
		return st.Phase == "Holding" && len(st.Held) == 1 && st.Held[0].Node == "z1" && strings.Contains(st.Held[0].Reason, "is not ready")
	}, 20*time.Second)
	if !slices.Equal(st.Moving, []string{"z1"}) || !strings.Contains(st.Message, "node z1 does not finish its move to zone z1") {
		t.Errorf("status while z1 is held: %+v", st)
	}
	cl.standInsCaughtUp()
	var n corev1.Node
	if err := cl.c.Get(cl.ctx, types.NamespacedName{Name: "z2"}, &n); err != nil || n.Labels[zones.ZoneLabel] != zones.GlobalZone {
		t.Fatalf("z2 started moving while z1 held the pool's one slot: %v %v", n.Labels, err)
	}

	var pool v1alpha1.NetshiftNodePool
	if err := cl.c.Get(cl.ctx, types.NamespacedName{Name: "zones"}, &pool); err != nil {
		t.Fatal(err)
	}
	pool.Spec.MaxParallel = ptr.To(intstr.FromInt32(2))
	edited := time.Now()
	if err := cl.c.Update(cl.ctx, &pool); err != nil {
		t.Fatal(err)
	}
	// How soon is logged, not judged: the integration tier runs beside the labs, at a low priority.
	cl.waitStatus("z2 moving after the pool's edit", func(st *v1alpha1.ZonesStatus) bool {
		return slices.Equal(st.Moving, []string{"z1", "z2"})
	}, 20*time.Second)
	t.Logf("the pool's edit was in status.zones.moving %d ms after it was written", time.Since(edited).Milliseconds())
	st = cl.waitStatus("z2's crash loop held", func(st *v1alpha1.ZonesStatus) bool {
		return len(st.Held) == 2 && st.Held[1].Node == "z2" && strings.Contains(st.Held[1].Reason, "CrashLoopBackOff") &&
			strings.Contains(st.Held[1].Reason, "cannot reach the zone's databases")
	}, 10*time.Second)
	if got := cl.centralCalls(); len(got) != 0 || st.Central != "Running" {
		t.Errorf("the central side changed during a held rollout: %v %s", got, st.Central)
	}

	cl.stall("z1", false)
	cl.mu.Lock()
	cl.crashing["z2"] = false
	cl.mu.Unlock()
	cl.restartPluginPod("z2") // the kubelet's next try starts a container that works
	st = cl.waitConverged(zones.Multi)
	if len(st.Held) != 0 {
		t.Errorf("held after convergence: %+v", st.Held)
	}
	if got := cl.centralCalls(); !slices.Equal(got, []string{"retire"}) {
		t.Errorf("central %v", got)
	}
	cl.uncordonedAll()
}

// waitStatus waits until status.zones satisfies ok.
func (cl *cluster) waitStatus(what string, ok func(*v1alpha1.ZonesStatus) bool, within time.Duration) *v1alpha1.ZonesStatus {
	cl.t.Helper()
	var st *v1alpha1.ZonesStatus
	err := wait.PollUntilContextTimeout(cl.ctx, 20*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		var cn v1alpha1.NetshiftNetwork
		if err := cl.c.Get(ctx, types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
			return false, err
		}
		st = cn.Status.Zones
		return st != nil && ok(st), nil
	})
	if err != nil {
		cl.t.Fatalf("%s: not within %s: %+v", what, within, st)
	}
	return st
}

// restartPluginPod clears a plugin pod's container state, as a new try of its
// container would: the stand-in then starts it afresh.
func (cl *cluster) restartPluginPod(node string) {
	cl.t.Helper()
	var pods corev1.PodList
	if err := cl.c.List(cl.ctx, &pods, client.InNamespace(pluginNS), client.MatchingLabels(pluginLabels)); err != nil {
		cl.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			p.Status.ContainerStatuses = nil
			if err := cl.c.Status().Update(cl.ctx, &p); err != nil {
				cl.t.Fatal(err)
			}
		}
	}
}
