package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/kubenode"
	"netshift.io/netshift/internal/lab/labcni"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
)

// alignPeriod is the agents' alignment period (internal/agent alignEvery).
const alignPeriod = 5 * time.Second

func mtuIn(t *testing.T, netns, link string) int {
	t.Helper()
	h, err := netdev.Open(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	m, err := h.MTU(link)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// netshiftCNIChained checks what a person would look at on each node: with
// a .conflist lab, the plugin's 10-lab.conflist alone, netshift-cni chained
// into it; with a --cni-conf lab, the plugin's 10-lab.conf, as it wrote it
// (one plugin, no netshift-cni), and netshift's 10-lab-netshift.conflist
// made of it, which the runtime loads first. The list the runtime loads holds
// the plugin's entry first and netshift-cni's last, and netshift-cni's binary
// is where the runtime looks for plugins.
func netshiftCNIChained(t *testing.T, s *lab.State) {
	t.Helper()
	layout, err := kubenode.ParseLayout(s.Options.Layout)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10-lab.conflist"}
	if s.Options.CNIConf {
		want = []string{"10-lab-netshift.conflist", "10-lab.conf"}
	}
	for _, n := range s.Topology.Nodes {
		dir, err := s.NodeFile(n.Name, layout.CNIConfDir)
		if err != nil {
			t.Fatal(err)
		}
		found, err := libcni.ConfFiles(dir, []string{".conf", ".conflist", ".json"})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(found) // as the runtime: the first is the one it loads
		var confs []string
		for _, f := range found {
			confs = append(confs, filepath.Base(f))
		}
		if !slices.Equal(confs, want) {
			t.Errorf("node %s: %s holds %q, want %q", n.Name, layout.CNIConfDir, confs, want)
			continue
		}
		chainedList(t, n.Name, found[0])
		if s.Options.CNIConf {
			pluginsConf(t, n.Name, found[1], found[0])
		}
		bin, err := s.NodeFile(n.Name, filepath.Join(layout.CNIBinDir, cni.PluginName))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(bin); err != nil {
			t.Errorf("node %s: netshift-cni is not installed: %v", n.Name, err)
		}
	}
}

// chainedList checks the list the runtime loads: the plugin's entry, then
// netshift-cni's.
func chainedList(t *testing.T, node, path string) {
	t.Helper()
	list, err := libcni.ConfListFromFile(path)
	if err != nil {
		t.Errorf("node %s: the runtime cannot load %s: %v", node, filepath.Base(path), err)
		return
	}
	if len(list.Plugins) != 2 || list.Plugins[0].Network.Type != labcni.Name || list.Plugins[1].Network.Type != cni.PluginName {
		t.Errorf("node %s: %s: want the plugin's entry, then netshift-cni's:\n%s", node, filepath.Base(path), list.Bytes)
	}
}

// pluginsConf checks the plugin's .conf beside netshift's list: one plugin,
// the lab's, no netshift-cni, and the very configuration the list's first
// entry holds; the list names it as what it was made of.
func pluginsConf(t *testing.T, node, conf, list string) {
	t.Helper()
	data, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	c, err := libcni.NetworkPluginConfFromBytes(data)
	if err != nil || c.Network.Type != labcni.Name || strings.Contains(string(data), cni.PluginName) {
		t.Errorf("node %s: %s (%v) is not the plugin's own:\n%s", node, filepath.Base(conf), err, data)
		return
	}
	var l map[string]json.RawMessage
	var plugins []json.RawMessage
	raw, _ := os.ReadFile(list)
	err = json.Unmarshal(raw, &l)
	if err == nil {
		err = json.Unmarshal(l["plugins"], &plugins)
	}
	if from := string(l[cni.ConvertedFrom]); err != nil || from != `"`+filepath.Base(conf)+`"` || len(plugins) == 0 || !sameJSON(plugins[0], data) {
		t.Errorf("node %s: %s (%v) is not made of %s as it is now:\n%s", node, filepath.Base(list), err, filepath.Base(conf), raw)
	}
}

// sameJSON: the same JSON value, however written.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

func tenantPod(name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c",
			Image: images.WorkloadRef, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/sleep", "3600"}}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// TestRealNodeLab: a lab of real nodes (kubelet, containerd, the CNI chain),
// laid out as k3s nodes are (runtime socket and CNI directories) with a
// network plugin that writes a .conf, with netshift installed from config/lab
// and the k3s component: the agents start and chain netshift-cni; a live MTU
// change under the probe,
// with tenants' hostile pods on the nodes and pods created on the nodes all
// through the change, ends with every pod on the new MTU, the nodes' own
// links untouched, no node restored; a pod created afterwards gets the new
// MTU through the real chain; lab down leaves nothing.
func TestRealNodeLab(t *testing.T) {
	const name = "e2ern"
	up(t, name, "--node-layout", "k3s", "--cni-conf")
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	netshiftCNIChained(t, s)
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("%d nodes registered, want 3", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if info := n.Status.NodeInfo; info.KubeletVersion != "v1.36.3" || !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
			t.Errorf("node %s: kubelet %s, runtime %s; want kubelet v1.36.3 on containerd", n.Name, info.KubeletVersion, info.ContainerRuntimeVersion)
		}
	}
	var system corev1.PodList
	if err := c.List(ctx, &system, client.InNamespace("netshift-system")); err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{}
	for _, p := range system.Items {
		if len(p.OwnerReferences) == 1 {
			owners[p.OwnerReferences[0].Kind]++
		}
		if p.Spec.Containers[0].Image != images.NetshiftRef {
			t.Errorf("pod %s runs %s, want the lab's %s", p.Name, p.Spec.Containers[0].Image, images.NetshiftRef)
		}
	}
	if owners["DaemonSet"] != 3 || owners["ReplicaSet"] < 1 {
		t.Errorf("netshift-system pods by owner %v: want an agent per node (DaemonSet) and the operator (Deployment)", owners)
	}

	// Tenants: pods that carry the old annotations with hostile values, and a host-network one.
	tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	hostile := map[string]string{"netshift.io/host-interface": "eth0", "netshift.io/netns": "../proc/1/ns/net"}
	waitFor(t, "the tenant namespace's ServiceAccount", func() bool {
		var sa corev1.ServiceAccount
		return c.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "default"}, &sa) == nil
	})
	for _, p := range []*corev1.Pod{
		tenantPod("annotated", "node-1", func(p *corev1.Pod) { p.Annotations = hostile }),
		tenantPod("missing-netns", "node-2", func(p *corev1.Pod) { p.Annotations = map[string]string{"netshift.io/netns": "does-not-exist"} }),
		tenantPod("hostnet", "node-3", func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Annotations = hostile }),
		tenantPod("veth-maker", "node-1", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}),
		tenantPod("renamer", "node-2", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}),
		tenantPod("doomed", "node-3", nil),
	} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the tenants' pods to run", func() bool {
		var pods corev1.PodList
		_ = c.List(ctx, &pods, client.InNamespace("tenant"))
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 6
	})
	// What a pod with NET_ADMIN may do to itself: a veth pair inside it whose peer is numbered
	// like one of its node's own links (eth0, or br-phy when the pod's eth0 holds that number),
	// its own eth0 renamed (done here with the machine's ip, in the pods' namespaces).
	maker := podNetns(t, s, "tenant", "veth-maker")
	taken := map[int]bool{}
	for name := range linkMTUsIn(t, maker) {
		taken[linkIndex(t, maker, name)] = true
	}
	var nodeIndex int
	for _, link := range []string{"eth0", "br-phy", "br-int"} {
		if i := linkIndex(t, "/run/netns/"+s.Topology.Nodes[0].Netns, link); !taken[i] {
			nodeIndex = i
			break
		}
	}
	inPodNetns(t, maker, "ip", "link", "add", "inner0", "mtu", "1480", "type", "veth", "peer", "name", "inner1", "index", fmt.Sprint(nodeIndex), "mtu", "1480")
	renamer := podNetns(t, s, "tenant", "renamer")
	inPodNetns(t, renamer, "ip", "link", "set", "eth0", "down")
	inPodNetns(t, renamer, "ip", "link", "set", "eth0", "name", "eth9")
	nodeLinks := map[string]map[string]int{}
	for _, n := range s.Topology.Nodes {
		nodeLinks[n.Name] = map[string]int{"eth0": mtuIn(t, n.Netns, "eth0"), "br-phy": mtuIn(t, n.Netns, "br-phy")}
	}

	// Pods created on every node, one after another, all through the change (one a second: the
	// machine's two cores run the three nodes, the control plane and the probe too).
	stop := make(chan struct{})
	var churn sync.WaitGroup
	var created []string
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := 0; i < 30; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			name := fmt.Sprintf("churn-%d", i)
			if err := c.Create(ctx, tenantPod(name, fmt.Sprintf("node-%d", i%3+1), nil)); err == nil {
				created = append(created, name)
			}
		}
	}()
	report := underProbe(t, name, func() {
		edit(t, c, `{"spec":{"mtu":1350}}`)
		// A pod deleted between the plan and its step (T0 is a lead ahead of the schedule).
		waitFor(t, "the change to be scheduled", func() bool {
			var cn v1alpha1.NetshiftNetwork
			return c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn) == nil && cn.Status.Change != nil && cn.Status.Change.T0 != nil
		})
		doomed := tenantPod("doomed", "", nil)
		if err := c.Delete(ctx, doomed, client.GracePeriodSeconds(0)); err != nil {
			t.Errorf("delete the doomed pod: %v", err)
		}
		cn := waitChange(t, c)
		if cn.Status.Change.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("the change ended %s: %s", cn.Status.Change.Phase, cn.Status.Change.Message)
		}
	})
	close(stop)
	churn.Wait()
	if !report.OK {
		t.Errorf("the probe saw a connection die or a request fail: %+v", report)
	}
	t.Logf("MTU 1450 -> 1350 on real nodes: longest gap %.1f ms, %d pods created during the change", maxGap(report), len(created))

	var states v1alpha1.NetshiftNodeStateList
	if err := c.List(ctx, &states); err != nil {
		t.Fatal(err)
	}
	for _, nns := range states.Items {
		r := nns.Status.LiveChange
		if r == nil || r.Failed || r.Restore != "" {
			t.Errorf("node %s: report %+v; want every step done and no restore", nns.Name, r)
		}
	}
	for _, n := range s.Topology.Nodes {
		for link, mtu := range nodeLinks[n.Name] {
			if got := mtuIn(t, n.Netns, link); got != mtu {
				t.Errorf("node %s: %s MTU %d -> %d; a change of the pod MTU must leave the node's own links", n.Name, link, mtu, got)
			}
		}
	}

	// Every pod with a network of its own ends on the node's MTU: the probe's, the tenants',
	// and those created through the change once they run.
	waitFor(t, "the pods created through the change to run", func() bool {
		var pods corev1.PodList
		_ = c.List(ctx, &pods, client.InNamespace("tenant"))
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		return true
	})
	// The agents' periodic alignment catches pods the runtime listed late: every
	// pod is on the node's MTU within two periods.
	podsOffMTU := func() []string {
		var off []string
		for _, ns := range []string{lab.PodNamespace, "tenant"} {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.Spec.HostNetwork || p.Name == "renamer" || p.DeletionTimestamp != nil {
					continue
				}
				if got := mtuIn(t, podNetns(t, s, p.Namespace, p.Name), "eth0"); got != 1350 {
					off = append(off, fmt.Sprintf("pod %s/%s on %s: eth0 MTU %d, want the node's 1350", p.Namespace, p.Name, p.Spec.NodeName, got))
				}
			}
		}
		return off
	}
	off := podsOffMTU()
	for deadline := time.Now().Add(2 * alignPeriod); len(off) > 0 && time.Now().Before(deadline); off = podsOffMTU() {
		time.Sleep(200 * time.Millisecond)
	}
	for _, o := range off {
		t.Error(o)
	}

	if got := linkMTUsIn(t, maker); got["inner0"] != 1480 || got["inner1"] != 1480 {
		t.Errorf("the veth pair a pod made inside itself changed: %v", got)
	}
	if got := linkMTUsIn(t, renamer); got["eth9"] != 1450 {
		t.Errorf("the renamed pod's interface changed: %v (its pod's own doing: the step skips it)", got)
	}

	// A pod created through the API after the change gets the new MTU from the real chain.
	if err := c.Create(ctx, tenantPod("late", "", func(p *corev1.Pod) { p.Namespace = "tenant" })); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the late pod to run", func() bool {
		var p corev1.Pod
		return c.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "late"}, &p) == nil && p.Status.Phase == corev1.PodRunning
	})
	if got := mtuIn(t, podNetns(t, s, "tenant", "late"), "eth0"); got != 1350 {
		t.Errorf("a pod created after the change: eth0 MTU %d, want 1350", got)
	}

	// lab down leaves nothing of the nodes: no process, no cgroup, no namespace.
	recorded := append([]lab.Process(nil), s.Processes...)
	if err := s.Reload(); err == nil {
		recorded = s.Processes
	}
	mustNetshift(t, "lab", "down", "--name", name)
	for _, p := range recorded {
		if p.Alive() {
			t.Errorf("process %s (pid %d) still runs after lab down", p.Role, p.Pid)
		}
	}
	for _, h := range []string{"pids", "memory", "unified"} {
		if entries, _ := os.ReadDir("/sys/fs/cgroup/" + h); len(entries) > 0 {
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "netshift-lab-"+name) {
					t.Errorf("cgroup %s/%s left after lab down", h, e.Name())
				}
			}
		}
	}
}

// inPodNetns runs a command of the machine inside a pod's network namespace.
func inPodNetns(t *testing.T, netns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("nsenter", append([]string{"--net=" + netns, "--"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("in %s: %v: %v\n%s", netns, args, err, out)
	}
}

// linkIndex is a link's index in a network namespace.
func linkIndex(t *testing.T, netns, link string) int {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+netns, "--", "ip", "-o", "link", "show", link).Output()
	if err != nil {
		t.Fatal(err)
	}
	var i int
	if _, err := fmt.Sscanf(string(out), "%d:", &i); err != nil {
		t.Fatalf("an interface index in %q: %v", out, err)
	}
	return i
}

// linkMTUsIn reads every link's MTU in a network namespace.
func linkMTUsIn(t *testing.T, netns string) map[string]int {
	t.Helper()
	h, err := netdev.Open(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mtus, err := h.MTUs()
	if err != nil {
		t.Fatal(err)
	}
	return mtus
}

// podNetns finds a real pod's network namespace through its node's runtime.
func podNetns(t *testing.T, s *lab.State, ns, name string) string {
	t.Helper()
	var netns string
	waitFor(t, "pod "+ns+"/"+name+" in its node's runtime", func() bool {
		netns = s.RuntimeNetns(context.Background(), ns, name)
		return netns != ""
	})
	return netns
}

// TestRealNodesRebootedThroughTheDrainController: on three real nodes, with
// spec.onFailure.action Reboot, every node's HostVethMTU step fails, and
// fails again in its rollback. node-1 carries the control-plane role: it is
// never rebooted and is left cordoned for a person. node-2 and node-3 are
// rebooted into the old MTU through the drain controller, never both at once
// (the default pool's maxParallel 1, watched from the API server), and come
// back checked and uncordoned; the lab's reboot gives a node a new boot ID
// and leaves the machine's alone. A person then reboots node-1 with
// `netshift reconfigure --reboot`, and the change ends RolledBack with
// nothing cordoned and every pod at 1450.
func TestRealNodesRebootedThroughTheDrainController(t *testing.T) {
	const name = "e2err"
	machineBoot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	args := []string{"--nodes", "3", "--pods-per-node", "1"}
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		args = append(args, "--agent-arg", n+":--fail-step-once=HostVethMTU", "--agent-arg", n+":--fail-step-once=HostVethMTU")
	}
	up(t, name, args...)
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	ctx := context.Background()
	boots := func() map[string]string {
		out := map[string]string{}
		for _, n := range []string{"node-1", "node-2", "node-3"} {
			b, _ := os.ReadFile(s.BootIDPath(n))
			out[n] = strings.TrimSpace(string(b))
		}
		return out
	}
	bootsBefore, uptimeBefore := boots(), uptime(t)
	var node1 corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "node-1"}, &node1); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node1.DeepCopy())
	node1.Labels["node-role.kubernetes.io/control-plane"] = ""
	if err := c.Patch(ctx, &node1, patch); err != nil {
		t.Fatal(err)
	}
	busy := watchBusyNodes(t, c)

	edit(t, c, `{"spec":{"mtu":1350,"onFailure":{"action":"Reboot"}}}`)
	var cn v1alpha1.NetshiftNetwork
	waitFor(t, "node-2 and node-3 to be rebooted and checked", func() bool {
		return c.Get(ctx, client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Change != nil &&
			cn.Status.Change.Rollback != nil && !cn.Status.Change.Phase.Active() && len(cn.Status.Change.Rebooting) == 0
	})
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseFailed || !slices.Equal(ch.Held, []string{"node-1"}) || !strings.Contains(ch.Message, "rebootControlPlane") {
		t.Fatalf("change %+v: want node-1 held for a person, the others rebooted", ch)
	}
	after := boots()
	if after["node-1"] != bootsBefore["node-1"] || after["node-2"] == bootsBefore["node-2"] || after["node-3"] == bootsBefore["node-3"] {
		t.Fatalf("boot IDs %v, before %v: node-2 and node-3 rebooted, the control-plane node-1 never", after, bootsBefore)
	}
	if now, _ := os.ReadFile("/proc/sys/kernel/random/boot_id"); string(now) != string(machineBoot) || uptime(t) <= uptimeBefore {
		t.Fatalf("the machine rebooted (boot ID %s -> %s), not only the lab's nodes", machineBoot, now)
	}
	if !labNodes(t, c)["node-1"] {
		t.Fatal("node-1 uncordoned: it stays cordoned for a person")
	}
	waitFor(t, "node-2 and node-3 back in service", func() bool { on := labNodes(t, c); return !on["node-2"] && !on["node-3"] })

	mustNetshift(t, "--kubeconfig", s.Kubeconfig, "reconfigure", "--reboot", "--nodes", "node-1", "--reason", "the e2e test's person")
	// The change sees node-1 back once its agent reported the reboot done; the drain lets the node
	// go a moment later.
	waitFor(t, "node-1 rebooted by the person, back in service, and the change rolled back", func() bool {
		return c.Get(ctx, client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Change.Phase == v1alpha1.PhaseRolledBack && !labNodes(t, c)["node-1"]
	})
	if boots()["node-1"] == bootsBefore["node-1"] {
		t.Fatal("node-1 was not rebooted by netshift reconfigure --reboot")
	}
	if peak, worst := busy(); peak != 1 {
		t.Fatalf("at most %d nodes held by drains at once (%v): the reboots went through the default pool, which allows 1", peak, worst)
	}
	if on := labNodes(t, c); on["node-1"] || on["node-2"] || on["node-3"] {
		t.Fatalf("cordons %v after the change was rolled back", on)
	}
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		if f, err := nodeconfig.Read(s.NetworkConfigPath(n)); err != nil || f.MTU != 1450 {
			t.Errorf("node %s network configuration %+v, %v: want 1450", n, f, err)
		}
	}
	var pods corev1.PodList
	_ = c.List(ctx, &pods, client.InNamespace(lab.PodNamespace))
	checked := 0
	for _, p := range pods.Items {
		if netns := s.RuntimeNetns(ctx, p.Namespace, p.Name); netns != "" {
			checked++
			if got := mtuIn(t, netns, "eth0"); got != 1450 {
				t.Errorf("pod %s on %s: MTU %d, want 1450", p.Name, p.Spec.NodeName, got)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no running pod to check the MTU of (%d listed)", len(pods.Items))
	}
}

// watchBusyNodes follows the NetshiftNodeStates in the order the API server
// changed them; busy returns the most nodes that held a pool's slot at once,
// and which.
func watchBusyNodes(t *testing.T, c client.WithWatch) (busy func() (int, []string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, &v1alpha1.NetshiftNodeStateList{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	states := map[string]v1alpha1.NetshiftNodeStateStatus{}
	peak, worst := 0, []string(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			nns, ok := ev.Object.(*v1alpha1.NetshiftNodeState)
			if !ok {
				continue
			}
			mu.Lock()
			states[nns.Name] = nns.Status
			var now []string
			for n, st := range states {
				if hold.Busy(st) {
					now = append(now, n)
				}
			}
			if len(now) > peak {
				slices.Sort(now)
				peak, worst = len(now), now
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return func() (int, []string) {
		mu.Lock()
		defer mu.Unlock()
		return peak, worst
	}
}

// uptime reads the machine's uptime in seconds.
func uptime(t *testing.T) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	var up float64
	if _, err := fmt.Sscan(string(data), &up); err != nil {
		t.Fatalf("uptime %q: %v", data, err)
	}
	return up
}

// createPodsUntilReady creates count pods in a namespace of their own and
// returns, per pod, the time from its creation to the first time it is seen
// Ready; it deletes them afterwards.
func createPodsUntilReady(c client.Client, ns *corev1.Namespace, count int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	namespace := ns.Name
	fresh := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name, Labels: ns.Labels, Annotations: ns.Annotations}}
	if err := c.Create(ctx, fresh); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	defer func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	}()
	for {
		var sa corev1.ServiceAccount
		if c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "default"}, &sa) == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("namespace %s has no ServiceAccount: %w", namespace, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	created := map[string]time.Time{}
	for i := 0; i < count; i++ {
		p := tenantPod(fmt.Sprintf("p%d", i), "", nil)
		p.Namespace = namespace
		created[p.Name] = time.Now()
		if err := c.Create(ctx, p); err != nil {
			return nil, err
		}
	}
	ready := map[string]time.Duration{}
	for len(ready) < count {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		now := time.Now()
		for i := range pods.Items {
			p := &pods.Items[i]
			if _, seen := ready[p.Name]; !seen && podReady(p) {
				ready[p.Name] = now.Sub(created[p.Name])
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d pods Ready: %w", len(ready), count, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	out := make([]time.Duration, 0, count)
	for _, d := range ready {
		out = append(out, d)
	}
	return out, nil
}
