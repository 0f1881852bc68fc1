package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
	"netshift.io/netshift/internal/portpool/manager"
)

// pooledPod is a pod of the lab's pool-enabled namespace pinned to a node.
func pooledPod(name, namespace, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "workload", Image: images.WorkloadRef, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sleep", "2147483647"}}}}}
}

func waitRunning(t *testing.T, c client.Client, namespace, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &p)
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return &p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s not running after 90 s: %v %+v", namespace, name, err, p.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pooledWorld reads what a pooled pod is wired with.
type pooledWorld struct {
	t  testing.TB
	s  *lab.State
	c  client.Client
	nc *neutron.Client
}

func newPooledWorld(t testing.TB, name string) *pooledWorld {
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	if s.Neutron == nil {
		t.Fatal("the lab has no Neutron")
	}
	nc, err := neutron.Connect(context.Background(), neutron.Options{URL: s.Neutron.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &pooledWorld{t: t, s: s, c: labClient(t, name), nc: nc}
}

// onSwitch runs read on a node's switch.
func (w *pooledWorld) onSwitch(node string, read func(context.Context, *ovs.Switch)) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw, err := ovs.OpenSwitch(ctx, w.s.OVSDB(node))
	if err != nil {
		w.t.Fatal(err)
	}
	defer sw.Close()
	read(ctx, sw)
}

// plugged lists the ports netshift plugged on a node's switch.
func (w *pooledWorld) plugged(node string) (pl []plug.Plugged) {
	w.t.Helper()
	w.onSwitch(node, func(ctx context.Context, sw *ovs.Switch) {
		var err error
		if pl, err = sw.Plugged(ctx); err != nil {
			w.t.Fatal(err)
		}
	})
	return pl
}

// integrationIfaceID is the iface-id of the port's interface on the
// integration bridge of node (what ovn-controller binds it by), and whether
// it is attached with ovn-controller's flows installed.
func (w *pooledWorld) integrationIfaceID(node, portID string) (id string, bound bool) {
	w.t.Helper()
	side := plug.NamesFor(portID).IntegrationPatch
	w.onSwitch(node, func(ctx context.Context, sw *ovs.Switch) {
		got, err := sw.Interfaces(ctx, side)
		if err != nil {
			w.t.Fatal(err)
		}
		i, ok := got[side]
		id, bound = i.IfaceID, ok && i.OFPort > 0 && i.OVNInstalled
	})
	return id, bound
}

// checkWired asserts what a user would check of a pooled pod: its eth0
// carries its port's MAC and address, the node's switch binds the port by
// its ID with ovn-controller's flows in, and Neutron binds it to that node.
func (w *pooledWorld) checkWired(p *corev1.Pod) (portpool.Assignment, lab.PodSpec) {
	w.t.Helper()
	a, err := portpool.ParseAssignment(p.Annotations[plug.PoolAnnotation])
	if err != nil {
		w.t.Fatalf("pod %s: %v", p.Name, err)
	}
	if len(a.Addresses) != 1 || p.Status.PodIP != a.IPs[0] {
		w.t.Fatalf("pod %s: IP %s, its port's record %+v", p.Name, p.Status.PodIP, a)
	}
	netns := w.s.RuntimeNetns(context.Background(), p.Namespace, p.Name)
	if netns == "" {
		w.t.Fatalf("pod %s: no sandbox network namespace", p.Name)
	}
	if err := eth0Carries(netns, a); err != nil {
		w.t.Fatalf("pod %s: %v", p.Name, err)
	}
	if id, ok := w.integrationIfaceID(p.Spec.NodeName, a.ID); !ok || id != a.ID {
		w.t.Fatalf("pod %s on %s: integration-side interface of port %s has iface-id %q (attached %v)", p.Name, p.Spec.NodeName, a.ID, id, ok)
	}
	// Neutron (ML2/OVN) sets the port ACTIVE when OVN reports it up.
	var port neutron.Port
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if port, err = w.nc.GetPort(context.Background(), a.ID); err == nil && port.Status == "ACTIVE" {
			break
		}
	}
	if port.HostID != p.Spec.NodeName {
		w.t.Fatalf("pod %s: Neutron port %s is bound to host %q, not its node %s", p.Name, a.ID, port.HostID, p.Spec.NodeName)
	}
	if port.Status != "ACTIVE" {
		w.t.Fatalf("pod %s: Neutron port %s is %s 20 s after the pod ran, not ACTIVE: OVN did not report it up", p.Name, a.ID, port.Status)
	}
	return a, lab.PodSpec{Name: p.Namespace + "/" + p.Name, Node: p.Spec.NodeName, Netns: netns, IP: p.Status.PodIP}
}

// eth0Carries checks that the eth0 in netns carries the port's MAC and its
// one address.
func eth0Carries(netns string, a portpool.Assignment) error {
	return netdev.InNetns(netns, func() error {
		l, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if l.Attrs().HardwareAddr.String() != a.MAC {
			return fmt.Errorf("eth0 MAC %s, the port's %s", l.Attrs().HardwareAddr, a.MAC)
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil || len(addrs) != 1 || len(a.Addresses) != 1 || addrs[0].IPNet.String() != a.Addresses[0].CIDR {
			return fmt.Errorf("eth0 addresses %v (%v), the port's %+v", addrs, err, a.Addresses)
		}
		return nil
	})
}

// noLeak asserts that every port netshift plugged belongs to a live pod or
// is parked (kept for its next pod, never a live pod's port), and that
// every Neutron port the pools made is in a pool or owned by a live pod.
func (w *pooledWorld) noLeak() {
	w.t.Helper()
	var pods corev1.PodList
	if err := w.c.List(context.Background(), &pods); err != nil {
		w.t.Fatal(err)
	}
	live := map[string]string{} // pod → port
	for _, p := range pods.Items {
		if a, err := portpool.ParseAssignment(p.Annotations[plug.PoolAnnotation]); err == nil && p.DeletionTimestamp == nil {
			live[p.Namespace+"/"+p.Name] = a.ID
		}
	}
	// What still waits, said once each: the waits poll every 50 ms.
	said := map[string]bool{}
	logOnce := func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !said[msg] {
			said[msg] = true
			w.t.Log(msg)
		}
	}
	owned := map[string]string{} // port → pod
	for pod, id := range live {
		owned[id] = pod
	}
	// A forced deletion's port waits up to the agent's 30 s grace for its
	// sandbox's DEL, then the recycling: 2 minutes leave room on a busy machine.
	waitForWithin(w.t, "nothing plugged for a gone pod", 2*time.Minute, func() bool {
		for _, n := range w.s.Topology.Nodes {
			for _, pl := range w.plugged(n.Name) {
				if pl.Parked() {
					// Kept for the port's next pod: never while a live pod owns the port.
					if pod, ok := owned[pl.PortID]; ok {
						logOnce("node %s: port %s parked, while pod %s owns it", n.Name, pl.PortID, pod)
						return false
					}
					continue
				}
				if live[pl.Owner] != pl.PortID {
					logOnce("node %s: port %s plugged for %s, which does not own it", n.Name, pl.PortID, pl.Owner)
					return false
				}
			}
		}
		return true
	})
	waitForWithin(w.t, "every pooled Neutron port in a pool or owned by a live pod", 2*time.Minute, func() bool {
		ports, err := w.nc.ListPorts(context.Background(), nil)
		if err != nil {
			return false
		}
		owned := map[string]bool{}
		for _, id := range live {
			owned[id] = true
		}
		for _, p := range ports {
			if p.DeviceOwner != manager.DeviceOwner {
				continue
			}
			if !owned[p.ID] && (p.Name != portpool.AvailableName || p.DeviceID != "") {
				logOnce("Neutron port %s (%s, device %q) is neither free nor a live pod's", p.ID, p.Name, p.DeviceID)
				return false
			}
		}
		return true
	})
}

// pooledPodsReachEachOtherThroughTheirPorts (a step of
// TestThreeNodeNeutronLab): pods of a pool-enabled
// namespace, on different nodes, reach each other over TCP through the
// Neutron ports their pools handed them; each pod's eth0 carries its port's
// MAC and address, OVS binds each port by its ID, Neutron (ML2/OVN) reports
// each ACTIVE. The lab's other pods keep the lab's own network. A deleted
// pod leaves nothing plugged and its port goes back to its pool.
func pooledPodsReachEachOtherThroughTheirPorts(t *testing.T, name string) {
	w := newPooledWorld(t, name)
	ctx := context.Background()
	var wired []lab.PodSpec
	var ports []portpool.Assignment
	for i, n := range w.s.Topology.Nodes {
		p := pooledPod(fmt.Sprintf("web-%d", i+1), lab.PoolNamespace, n.Name)
		if err := w.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range w.s.Topology.Nodes {
		p := waitRunning(t, w.c, lab.PoolNamespace, fmt.Sprintf("web-%d", i+1))
		a, spec := w.checkWired(p)
		t.Logf("pod %s on %s: port %s, MAC %s, %s", p.Name, p.Spec.NodeName, a.ID, a.MAC, a.Addresses[0].CIDR)
		wired, ports = append(wired, spec), append(ports, a)
	}
	for _, from := range wired {
		for _, to := range wired {
			if from.Name != to.Name {
				if err := lab.TCPCheck(from, to, 3*time.Second); err != nil {
					t.Errorf("%s -> %s over TCP through their Neutron ports: %v", from.Name, to.Name, err)
				}
			}
		}
	}
	// netshift-cni reads as the node: its own pods, and no other node's.
	kubeconfig, err := w.s.NodeFile("node-1", "/etc/cni/net.d/netshift-cni/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asNode, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asNode.CoreV1().Pods(lab.PoolNamespace).Get(ctx, "web-1", metav1.GetOptions{}); err != nil {
		t.Errorf("netshift-cni of node-1 reading its own pod: %v", err)
	}
	if _, err := asNode.CoreV1().Pods(lab.PoolNamespace).Get(ctx, "web-2", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("netshift-cni of node-1 reading node-2's pod: %v, want Forbidden", err)
	}
	if _, err := asNode.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("netshift-cni of node-1 listing every pod: %v, want Forbidden", err)
	}
	// The lab's own pods went through the wrapped network plugin, as before.
	everyPodReachesEveryOther(t, name)
	for _, p := range labPods(t, w.s) {
		if !strings.HasPrefix(p.IP, "198.18.") {
			t.Errorf("lab pod %s: IP %q, want the lab's own network", p.Name, p.IP)
		}
	}

	// A deleted pod: its plug goes, its port returns to the pool, reset.
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: lab.PoolNamespace, Name: "web-1"}}
	if err := w.c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web-1 gone", func() bool {
		return apierrors.IsNotFound(w.c.Get(ctx, client.ObjectKeyFromObject(gone), &corev1.Pod{}))
	})
	waitFor(t, "web-1's port reset and free", func() bool {
		port, err := w.nc.GetPort(ctx, ports[0].ID)
		return err == nil && port.Name == portpool.AvailableName && port.DeviceID == ""
	})
	// Its device stays on its node, parked for the port's next pod: still
	// plugged, nobody's, bound by ovn-controller, and ACTIVE in Neutron.
	waitFor(t, "web-1's device parked on "+wired[0].Node, func() bool {
		for _, pl := range w.plugged(wired[0].Node) {
			if pl.PortID == ports[0].ID {
				return pl.Parked() && pl.Owner == ""
			}
		}
		return false
	})
	if id, bound := w.integrationIfaceID(wired[0].Node, ports[0].ID); !bound || id != ports[0].ID {
		t.Errorf("web-1's parked port on %s: iface-id %q, bound %v; want it bound as %s", wired[0].Node, id, bound, ports[0].ID)
	}
	if port, err := w.nc.GetPort(ctx, ports[0].ID); err != nil || port.Status != "ACTIVE" || port.HostID != wired[0].Node {
		t.Errorf("web-1's parked port in Neutron: %+v, %v; want ACTIVE on %s", port, err, wired[0].Node)
	}

	// A pod created while the operator restarts: netshift-cni waits for the
	// restarted operator's record (the kubelet retries a sandbox whose wait ran out).
	var operators corev1.PodList
	if err := w.c.List(ctx, &operators, client.InNamespace("netshift-system"), client.MatchingLabels{"app.kubernetes.io/name": "netshift-operator"}); err != nil || len(operators.Items) == 0 {
		t.Fatalf("the operator's pods: %d, %v", len(operators.Items), err)
	}
	for i := range operators.Items {
		if err := w.c.Delete(ctx, &operators.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.c.Create(ctx, pooledPod("web-4", lab.PoolNamespace, "node-1")); err != nil {
		t.Fatal(err)
	}
	p := waitRunning(t, w.c, lab.PoolNamespace, "web-4")
	_, spec := w.checkWired(p)
	if err := lab.TCPCheck(spec, wired[1], 3*time.Second); err != nil {
		t.Errorf("%s -> %s over TCP: %v", spec.Name, wired[1].Name, err)
	}
	w.noLeak()

	// node-2 reboots (the lab's real reboot: its kubelet, runtime and pods go, and its runtime's
	// state with them). Its pooled pod comes back on the same port, wired again.
	mustNetshift(t, "lab", "--name", name, "rebuild-node", "node-2")
	var web2 corev1.Pod
	waitFor(t, "web-2 running again after node-2's reboot", func() bool {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: lab.PoolNamespace, Name: "web-2"}, &web2)
		netns := w.s.RuntimeNetns(ctx, lab.PoolNamespace, "web-2")
		return err == nil && web2.Status.Phase == corev1.PodRunning && web2.Status.PodIP != "" && netns != "" && netns != wired[1].Netns
	})
	again, spec := w.checkWired(&web2)
	t.Logf("web-2 after node-2's reboot: port %s in a new sandbox (%s)", again.ID, spec.Netns)
	if again.ID != ports[1].ID {
		t.Errorf("web-2 after the reboot: port %s, before %s", again.ID, ports[1].ID)
	}
	if err := lab.TCPCheck(wired[2], spec, 3*time.Second); err != nil {
		t.Errorf("%s -> %s over TCP after node-2's reboot: %v", wired[2].Name, spec.Name, err)
	}
	w.noLeak()

	// The next step starts from a pool namespace with no pod.
	if err := w.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(lab.PoolNamespace)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pooled pods gone", func() bool {
		var pods corev1.PodList
		return w.c.List(ctx, &pods, client.InNamespace(lab.PoolNamespace)) == nil && len(pods.Items) == 0
	})
	w.noLeak()
}

// pooledPodWhosePortNeverComes (a step of TestTwoNodeNeutronLab): a pod
// whose pool cannot make ports (its namespace names a network Neutron does
// not have) fails its sandbox with netshift-cni's error, which names the
// pool and its state, and leaves nothing behind; a pod deleted while
// netshift-cni waits for its port ends the wait at once, and leaves nothing
// behind either.
func pooledPodWhosePortNeverComes(t *testing.T, name string) {
	w := newPooledWorld(t, name)
	ctx := context.Background()
	tapsBefore := map[string][]string{} // of the pods an earlier step left running
	for _, n := range w.s.Topology.Nodes {
		tapsBefore[n.Name] = tapsOn(t, n.Netns)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-network", Labels: map[string]string{portpool.OptInLabel: "enabled"},
		Annotations: map[string]string{manager.ProjectAnnotation: w.s.Neutron.Project, manager.NetworkAnnotation: "00000000-0000-0000-0000-000000000000",
			manager.SecurityGroupsAnnotation: w.s.Neutron.SecurityGroup}}}
	if err := w.c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The agent lists the namespace for netshift-cni before a pod of it comes.
	time.Sleep(2 * time.Second)
	if err := w.c.Create(ctx, pooledPod("stuck", ns.Name, "node-1")); err != nil {
		t.Fatal(err)
	}
	var sandboxError string
	deadline := time.Now().Add(90 * time.Second)
	for sandboxError == "" && time.Now().Before(deadline) {
		var events corev1.EventList
		if err := w.c.List(ctx, &events, client.InNamespace(ns.Name)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "stuck" && e.Reason == "FailedCreatePodSandBox" {
				sandboxError = e.Message
			}
		}
		time.Sleep(time.Second)
	}
	t.Logf("the sandbox's error: %s", sandboxError)
	for _, want := range []string{"netshift-cni: node node-1", "no Neutron port recorded for it by netshift's operator in time", "waited 30s",
		"PoolNotReady", "pool lab/00000000-0000-0000-0000-000000000000/host=node-1", "last Neutron error"} {
		if !strings.Contains(sandboxError, want) {
			t.Errorf("netshift-cni's error lacks %q", want)
		}
	}
	var stuck corev1.Pod
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "stuck"}, &stuck); err != nil {
		t.Fatal(err)
	}
	for _, c := range stuck.Status.Conditions {
		if c.Type == v1alpha1.PodPortAssigned && (c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonPoolNotReady) {
			t.Errorf("condition %s: %+v", v1alpha1.PodPortAssigned, c)
		}
	}

	// A pod deleted while netshift-cni waits for its port.
	if err := w.c.Create(ctx, pooledPod("short-lived", ns.Name, "node-2")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	for _, p := range []string{"short-lived", "stuck"} {
		if err := w.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: p}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both pods gone", func() bool {
		var pods corev1.PodList
		return w.c.List(ctx, &pods, client.InNamespace(ns.Name)) == nil && len(pods.Items) == 0
	})
	w.noLeak()
	for _, n := range w.s.Topology.Nodes {
		for _, tap := range tapsOn(t, n.Netns) {
			if !slices.Contains(tapsBefore[n.Name], tap) {
				t.Errorf("node %s: a pod's node end %s is left", n.Name, tap)
			}
		}
	}
}

// tapsOn lists the pods' node ends (tap...) in a node's namespace.
func tapsOn(t *testing.T, netns string) (taps []string) {
	t.Helper()
	if err := netdev.InNetns(netns, func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			if strings.HasPrefix(l.Attrs().Name, "tap") {
				taps = append(taps, l.Attrs().Name)
			}
		}
		return err
	}); err != nil {
		t.Fatalf("links in %s: %v", netns, err)
	}
	return taps
}
