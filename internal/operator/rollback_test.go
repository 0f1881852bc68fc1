package operator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
	"netshift.io/netshift/internal/operator"
)

// TestASystematicFailureRebootsUnderThePoolLimit: three nodes whose agents
// reach no Open vSwitch, so an MTU change's HostVethMTU step fails on every
// node with the same error, as a broken OVS would make it, and so does the
// rollback's NodePortMTU step. With spec.onFailure.action Reboot:
//   - k2 and k3 are rebooted through the drain controller, never both at once
//     (the default pool's maxParallel 1, watched from the API server), and
//     each is back in service once its agent checked it on its new boot;
//   - k1, labelled control-plane, gets no operation and stays cordoned for a
//     person;
//   - the person's reboot of k1 (`netshift reconfigure --reboot`) ends the
//     change RolledBack, nothing cordoned, Degraded saying the spec still asks
//     for what was rolled back.
func TestASystematicFailureRebootsUnderThePoolLimit(t *testing.T) {
	cl := newCluster(t)
	startLiveChangeOperator(t, cl)
	cl.createNodes("k1", "k2", "k3")
	cl.update(cl.node("k1"), func(o client.Object) {
		o.SetLabels(map[string]string{"node-role.kubernetes.io/control-plane": ""})
	})
	slots := cl.watchSlots(map[string]string{"k1": "default", "k2": "default", "k3": "default"})
	reboots := startRebootableAgents(t, cl, "k1", "k2", "k3")

	cn := createNetshiftNetwork(cl, v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1450), OnFailure: v1alpha1.FailurePolicy{Action: v1alpha1.FailureReboot}})
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To[int32](1400) })
	explain := func() string { return fmt.Sprintf("change %+v", cn.Status.Change) }
	cl.eventually(2*time.Minute, "k2 and k3 rebooted through the drain controller", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		ch := cn.Status.Change
		return ch != nil && ch.Rollback != nil && !ch.Phase.Active() && len(ch.Rebooting) == 0
	}, explain)
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseFailed || !ch.Rollback.All || !slices.Equal(ch.Held, []string{"k1"}) || ch.Failed != 1 {
		t.Fatalf("change %+v: want every node rolled back, k1 held for a person", ch)
	}
	if got := reboots(); got["k1"] != 0 || got["k2"] != 1 || got["k3"] != 1 {
		t.Fatalf("reboots %v: want k2 and k3 once each, the control-plane k1 never", got)
	}
	if cl.state("k1").SyncOperation != "" || !cl.node("k1").Spec.Unschedulable {
		t.Fatalf("k1 (operation %q, holds %+v) must stay cordoned with no operation", cl.state("k1").SyncOperation, cl.state("k1").Holds)
	}
	// A drain lets its node go once the agent reported its work done: a moment after the change saw it.
	cl.eventually(30*time.Second, "k2 and k3 back in service", func() bool {
		return !cl.node("k2").Spec.Unschedulable && !cl.node("k3").Spec.Unschedulable
	}, func() string { return fmt.Sprintf("k2 %+v, k3 %+v", cl.state("k2"), cl.state("k3")) })

	now := metav1.Now()
	op := v1alpha1.NodeOperation{ID: "person-reboot", Kind: v1alpha1.OperationReboot, RequestedAt: &now,
		Network: &v1alpha1.NodeNetworkConfig{MTU: 1450, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}
	if err := operator.StartOperation(cl.ctx, cl.c, op, []string{"k1"}); err != nil {
		t.Fatal(err)
	}
	cl.eventually(time.Minute, "the change rolled back once k1 was rebooted", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Change.Phase == v1alpha1.PhaseRolledBack && !cl.node("k1").Spec.Unschedulable
	}, explain)
	if peak := slots.peaks()["default"]; peak != 1 {
		t.Errorf("at most %d nodes of the default pool (maxParallel 1) held a drain slot at once, want exactly 1", peak)
	}
	if deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded); deg == nil || deg.Reason != v1alpha1.ReasonChangeRolledBack {
		t.Errorf("Degraded %+v: the spec still asks for the MTU that was rolled back", deg)
	}
	if cn.Status.Applied.MTU != 1450 {
		t.Errorf("applied MTU %d after the rollback, want 1450", cn.Status.Applied.MTU)
	}
}

// TestASystematicFailureUnderRollbackRebootsNothing: the same failure on
// every node, under the default policy: every node is rolled back, the
// rollback fails too, and every node is held cordoned for a person, none
// given an operation.
func TestASystematicFailureUnderRollbackRebootsNothing(t *testing.T) {
	cl := newCluster(t)
	startLiveChangeOperator(t, cl)
	cl.createNodes("k1", "k2")
	reboots := startRebootableAgents(t, cl, "k1", "k2")
	cn := createNetshiftNetwork(cl, v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1450)})
	cl.update(cn, func(o client.Object) { o.(*v1alpha1.NetshiftNetwork).Spec.MTU = ptr.To[int32](1400) })
	cl.eventually(time.Minute, "the change to end", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Change != nil && cn.Status.Change.Rollback != nil && !cn.Status.Change.Phase.Active()
	})
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseFailed || !slices.Equal(ch.Held, []string{"k1", "k2"}) || len(ch.Rebooting) != 0 {
		t.Fatalf("change %+v: want both nodes held, none rebooting", ch)
	}
	for _, n := range []string{"k1", "k2"} {
		if st := cl.state(n); st.SyncOperation != "" || !cl.node(n).Spec.Unschedulable {
			t.Errorf("node %s: operation %q, cordoned %v: want no operation and the cordon kept", n, st.SyncOperation, cl.node(n).Spec.Unschedulable)
		}
	}
	if got := reboots(); len(got) != 0 {
		t.Fatalf("reboots %v under action Rollback", got)
	}
}

// createNetshiftNetwork creates NetshiftNetwork "cluster" and waits for the
// operator to record its values as applied.
func createNetshiftNetwork(cl *cluster, spec v1alpha1.NetshiftNetworkSpec) *v1alpha1.NetshiftNetwork {
	cl.t.Helper()
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}, Spec: spec}
	if err := cl.c.Create(cl.ctx, cn); err != nil {
		cl.t.Fatal(err)
	}
	cl.eventually(30*time.Second, "the applied values recorded", func() bool {
		_ = cl.c.Get(cl.ctx, client.ObjectKeyFromObject(cn), cn)
		return cn.Status.Applied != nil
	})
	return cn
}

// startLiveChangeOperator runs the operator with a short lead and spacing.
func startLiveChangeOperator(t *testing.T, cl *cluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(cl.ctx)
	mgr, err := operator.NewManager(ctx, env.OperatorConfig(), operator.Options{MetricsAddr: "0", HealthAddr: "0",
		LeaderElection: true, LeaderElectionID: "netshift-operator", LeaderElectionNS: operator.Namespace,
		EvictionRetry: 200 * time.Millisecond, AdmissionSettle: 300 * time.Millisecond, Registry: prometheus.NewRegistry(), ManyInProcess: true,
		TimeAddr: "0", ChangeLead: time.Second, StepSpacing: 50 * time.Millisecond, AnswerTimeout: time.Minute, ChangeRetry: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// startRebootableAgents runs an agent per node with no Open vSwitch and no
// pods, whose reboot gives its node a new boot ID; reboots returns how many
// times each node was rebooted.
func startRebootableAgents(t *testing.T, cl *cluster, nodes ...string) (reboots func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	count := map[string]int{}
	dir := t.TempDir()
	for _, n := range nodes {
		bootFile := filepath.Join(dir, n)
		if err := os.WriteFile(bootFile, []byte(n+"-boot-0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		reboot := func(_ context.Context, node, _ string) error {
			mu.Lock()
			defer mu.Unlock()
			count[node]++
			return os.WriteFile(bootFile, []byte(fmt.Sprintf("%s-boot-%d\n", node, count[node])), 0o644)
		}
		mgr, err := agent.NewManager(env.AgentConfig(n), agent.Options{Node: n, HealthAddr: "0", ManyInProcess: true,
			Pods: nodeWithoutPods{}, BootIDFile: bootFile, Reboot: reboot, NewPlugin: ofItsOwn})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(cl.ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range count {
			out[k] = v
		}
		return out
	}
}
