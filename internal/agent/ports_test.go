package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
)

var (
	env        *testenv.Env
	envMissing error
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, &envMissing)) }

// startAgent runs the node's agent, as its own ServiceAccount, until stop is called.
// The node's network namespace is the switch's: the agent checks a tap name
// against the devices there.
func startAgent(t *testing.T, node string, sw *ovstest.Switch) (stop func()) {
	t.Helper()
	return startAgentWith(t, node, sw, CNIInstall{})
}

// startAgentWith is startAgent with netshift-cni's side of the agent set as cni says.
func startAgentWith(t *testing.T, node string, sw *ovstest.Switch, cni CNIInstall) (stop func()) {
	t.Helper()
	return runAgent(t, Options{Node: node, OVSDB: sw.DB.Socket, NodeNetns: sw.Netns, PlugPorts: true, CNI: cni})
}

// runAgent runs an agent with o, as its node's ServiceAccount, until stop is called.
func runAgent(t *testing.T, o Options) (stop func()) {
	t.Helper()
	o.HealthAddr, o.ManyInProcess = "0", true
	mgr, err := NewManager(env.AgentConfig(o.Node), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
}

// vmNamespace is a namespace a cluster admin opted in to port-spec, owning
// the ports ids lists, at most max ports a node ("" for the default).
func vmNamespace(name, ids, max string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{plug.PortSpecOptInLabel: plug.PortSpecEnabled},
		Annotations: map[string]string{plug.PortIDsAnnotation: ids}}}
	if max != "" {
		ns.Annotations[plug.MaxPortsAnnotation] = max
	}
	return ns
}

func vmPod(name, node, spec string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", Annotations: map[string]string{plug.PortSpecAnnotation: spec}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "vm", Image: "vm"}}}}
}

// waitCondition waits until the pod's network-ready condition has the reason.
func waitCondition(t *testing.T, c client.Client, name, reason string) corev1.PodCondition {
	t.Helper()
	return waitConditionMessage(t, c, name, reason, "")
}

// waitConditionMessage waits until the pod's network-ready condition has the
// reason and a message that contains text. name is namespace/name, or a
// name in namespace vms.
func waitConditionMessage(t *testing.T, c client.Client, name, reason, text string) corev1.PodCondition {
	t.Helper()
	return waitConditionFor(t, c, name, reason, text, 15*time.Second)
}

// waitConditionWithin is waitCondition, waiting up to within.
func waitConditionWithin(t *testing.T, c client.Client, name, reason string, within time.Duration) corev1.PodCondition {
	t.Helper()
	return waitConditionFor(t, c, name, reason, "", within)
}

func waitConditionFor(t *testing.T, c client.Client, name, reason, text string, within time.Duration) corev1.PodCondition {
	t.Helper()
	key := types.NamespacedName{Namespace: "vms", Name: name}
	if ns, n, ok := strings.Cut(name, "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: n}
	}
	deadline := time.Now().Add(within)
	var last corev1.PodCondition
	for time.Now().Before(deadline) {
		var pod corev1.Pod
		if err := c.Get(context.Background(), key, &pod); err == nil {
			for _, cond := range pod.Status.Conditions {
				if cond.Type == plug.ReadyCondition {
					last = cond
					if cond.Reason == reason && strings.Contains(cond.Message, text) {
						return cond
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pod %s: condition %s never had reason %s; last %+v", name, plug.ReadyCondition, reason, last)
	return last
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAgentPlugsPodPorts(t *testing.T) {
	testenv.Require(t, envMissing)
	sw := ovstest.Start(t)
	ctx := context.Background()
	c := env.Client
	node := "plug-1"
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, vmNamespace("vms", "7c1d0e2f-*", "")); err != nil {
		t.Fatal(err)
	}
	stop := startAgent(t, node, sw)
	defer func() { stop() }()

	// Per-port (the default): ready before the tap exists, isolation lifted once bound.
	idA, idB := "7c1d0e2f-1111-4000-8000-00000000000a", "7c1d0e2f-2222-4000-8000-00000000000b"
	a := vmPod("vm-a", node, fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0a","isolate":true}`, idA))
	if err := c.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, "vm-a", reasonReady)
	if cond.Status != corev1.ConditionTrue || !strings.Contains(cond.Message, "ipb-"+idA) {
		t.Errorf("vm-a condition %+v", cond)
	}
	n := plug.NamesFor(idA)
	if got := strings.Trim(sw.Vsctl("get", "interface", n.IntegrationPatch, "external_ids:vm-uuid"), `"`); got != string(a.UID) {
		t.Errorf("vm-uuid %q, want the pod's UID %s", got, a.UID)
	}
	if got := sw.Vsctl("get", "interface", plug.DefaultTap(idA), "ofport"); got != "-1" && got != "[]" {
		t.Errorf("the tap is attached (%s) though its device was never created", got)
	}
	waitFor(t, "the activation of vm-a's port", func() bool { return sw.Vsctl("get", "port", n.BridgePatch, "tag") == "[]" })

	// vm-a's annotation becomes invalid (a multicast MAC): its port is unplugged, and
	// plugged again once the annotation is fixed.
	setSpec := func(spec string) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{plug.PortSpecAnnotation: spec}}})
		if err := c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vm-a", Namespace: "vms"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	setSpec(fmt.Sprintf(`{"id":%q,"mac":"01:00:5e:00:00:01"}`, idA))
	cond = waitCondition(t, c, "vm-a", reasonInvalid)
	if !strings.Contains(cond.Message, "multicast") || !strings.Contains(cond.Message, "no port is plugged") {
		t.Errorf("vm-a with an invalid annotation: %+v", cond)
	}
	waitFor(t, "vm-a's port to be unplugged", func() bool { return !strings.Contains(sw.Vsctl("list-br"), n.Bridge) })
	setSpec(fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0a"}`, idA))
	waitCondition(t, c, "vm-a", reasonReady)

	// The node switched to direct while vm-a is plugged per-port: vm-b is refused.
	var nd corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: node}, &nd); err != nil {
		t.Fatal(err)
	}
	nd.Annotations = map[string]string{plug.ModeAnnotation: "direct"}
	if err := c.Update(ctx, &nd); err != nil {
		t.Fatal(err)
	}
	tapB := plug.DefaultTap(idB)
	if err := c.Create(ctx, vmPod("vm-b", node, fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0b"}`, idB))); err != nil {
		t.Fatal(err)
	}
	cond = waitCondition(t, c, "vm-b", reasonRefused)
	if cond.Status != corev1.ConditionFalse || !strings.Contains(cond.Message, idA) || !strings.Contains(cond.Message, "direct") {
		t.Errorf("vm-b refusal %+v does not say why", cond)
	}
	if strings.Contains(sw.Vsctl("show"), tapB) {
		t.Errorf("a refused plug changed the switch")
	}

	// vm-a goes: everything of its port goes; vm-b is then plugged directly and
	// waits for its tap.
	if err := c.Delete(ctx, a, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "vm-a's bridge to go", func() bool { return !strings.Contains(sw.Vsctl("list-br"), n.Bridge) })
	if strings.Contains(sw.Vsctl("show"), idA) {
		t.Errorf("something of vm-a's port is left:\n%s", sw.Vsctl("show"))
	}
	waitCondition(t, c, "vm-b", reasonWaitingForDevice)
	sw.Run("ip", "-n", sw.Netns, "link", "add", tapB, "type", "veth", "peer", "name", "vmb-eth0")
	sw.Run("ip", "-n", sw.Netns, "link", "set", tapB, "up")
	cond = waitCondition(t, c, "vm-b", reasonReady)
	if cond.Status != corev1.ConditionTrue {
		t.Errorf("vm-b %+v", cond)
	}
	if got := sw.Vsctl("port-to-br", tapB); got != "br-int" {
		t.Errorf("direct: tap on %s", got)
	}

	// A port-spec naming a tap at all (here the integration bridge) is
	// invalid: a tap's name derives from the port ID alone.
	before := sw.Vsctl("show")
	idC := "7c1d0e2f-3333-4000-8000-00000000000c"
	if err := c.Create(ctx, vmPod("vm-c", node, fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0c","tap":"br-int"}`, idC))); err != nil {
		t.Fatal(err)
	}
	cond = waitCondition(t, c, "vm-c", reasonInvalid)
	if !strings.Contains(cond.Message, `tap: "br-int" is not the port's own`) {
		t.Errorf("vm-c naming br-int as its tap: %+v", cond)
	}
	if after := sw.Vsctl("show"); after != before {
		t.Errorf("a refused tap changed the switch:\n%s\nwas\n%s", after, before)
	}
	// The port's own tap name is a device of the node already, with the
	// node's address: refused, and left alone.
	tapC := plug.DefaultTap(idC)
	sw.Run("ip", "-n", sw.Netns, "link", "add", tapC, "type", "veth", "peer", "name", "uplink0-peer")
	sw.Run("ip", "-n", sw.Netns, "addr", "add", "192.0.2.10/24", "dev", tapC)
	var vmc corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: "vms", Name: "vm-c"}, &vmc); err != nil {
		t.Fatal(err)
	}
	vmc.Annotations[plug.PortSpecAnnotation] = fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0c"}`, idC)
	if err := c.Update(ctx, &vmc); err != nil {
		t.Fatal(err)
	}
	cond = waitConditionMessage(t, c, "vm-c", reasonRefused, tapC)
	if !strings.Contains(cond.Message, `"`+tapC+`" is already a device of the node with address 192.0.2.10/24`) {
		t.Errorf("vm-c whose tap name is a device of the node: %+v", cond)
	}
	if after := sw.Vsctl("show"); after != before {
		t.Errorf("a refused tap changed the switch:\n%s\nwas\n%s", after, before)
	}
	if out := sw.Run("ip", "-n", sw.Netns, "-o", "link", "show", tapC); strings.Contains(out, "master") {
		t.Errorf("the node's device was enslaved: %s", out)
	}
	if err := c.Delete(ctx, &vmc, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}

	// vm-b is deleted while the agent is down: the next agent cleans it up.
	stop()
	if err := c.Delete(ctx, vmPod("vm-b", node, ""), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	stop = startAgent(t, node, sw)
	waitFor(t, "the stale direct port to go", func() bool { return !strings.Contains(sw.Vsctl("list-ports", "br-int"), tapB) })
}
