package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/testenv"
)

// labCameUpWhole (the first step of TestLiveChanges, in each of plain VXLAN,
// plain Geneve and OVN): a 3-node lab with 2 pods per node is up, every pod
// reaches every other pod over TCP, the API server has the Nodes Ready and
// the Pods Running with their IPs.
func labCameUpWhole(t *testing.T, name string, st lab.Status) {
	t.Helper()
	if !st.Ready || !st.Healthy || len(st.Nodes) != 3 || len(st.Pods) != 6 {
		t.Fatalf("lab status: ready=%v healthy=%v nodes=%d pods=%d", st.Ready, st.Healthy, len(st.Nodes), len(st.Pods))
	}
	everyPodReachesEveryOther(t, name)
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	c := labClient(t, name)
	var nodes corev1.NodeList
	var pods corev1.PodList
	if err := c.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if len(nodes.Items) != 3 || ready != 3 {
		t.Errorf("nodes: %d, %d Ready; want 3 Ready", len(nodes.Items), ready)
	}
	// Every pod runs on its node with an address of that node's part of the pod network.
	if err := c.List(context.Background(), &pods, client.InNamespace(lab.PodNamespace)); err != nil || len(pods.Items) != 6 {
		t.Fatalf("pods: %d, %v; want 6", len(pods.Items), err)
	}
	for _, p := range pods.Items {
		n, _ := s.Topology.Node(p.Spec.NodeName)
		// The lab's plugin gives node i 198.18.i.0/24; OVN-Kubernetes' cluster manager picks each node's subnet.
		inSubnet := strings.HasPrefix(p.Status.PodIP, fmt.Sprintf("198.18.%d.", n.Index)) || (s.Options.OVNKubernetes != "" && strings.HasPrefix(p.Status.PodIP, "198.18."))
		if p.Status.Phase != corev1.PodRunning || !inSubnet {
			t.Errorf("pod %s on %s: %s, IP %q", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
		}
	}
}

// labGoesLeavingNothing (the last step of TestLiveChanges): `lab down`
// leaves no namespace, link, process or file behind of what the lab had
// made since before was taken. A failed test skips it, so that its lab is
// kept for NETSHIFT_E2E_ARTIFACTS before it goes.
func labGoesLeavingNothing(t *testing.T, name string, before footprint) {
	t.Helper()
	if t.Failed() {
		return
	}
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mustNetshift(t, "lab", "down", "--name", name)
	t.Logf("lab down: %.1f s", time.Since(start).Seconds())
	waitGone(t, before)
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("state directory %s left behind", s.Dir())
	}
}

// labStatusJSONAndExec (a step of TestTwoNodeLab): the JSON carries what the
// other tests read, and exec reaches a node's own OVS and a pod's namespace.
func labStatusJSONAndExec(t *testing.T, name string) {
	st := status(t, name)
	var raw struct {
		Nodes []map[string]any `json:"nodes"`
		Pods  []map[string]any `json:"pods"`
	}
	out := mustNetshift(t, "lab", "status", "--name", name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, n := range raw.Nodes {
		for _, k := range []string{"name", "netns", "underlayIP"} {
			if n[k] == nil || n[k] == "" {
				t.Errorf("node entry lacks %s: %v", k, n)
			}
		}
	}
	for _, p := range raw.Pods {
		for _, k := range []string{"name", "node", "netns", "ip"} {
			if p[k] == nil || p[k] == "" {
				t.Errorf("pod entry lacks %s: %v", k, p)
			}
		}
		if strings.Contains(p["ip"].(string), "/") {
			t.Errorf("pod ip %v has a prefix length", p["ip"])
		}
	}
	if out, err := netshift(t, "lab", "exec", "--name", name, st.Pods[0].Name, "--", "ip", "-o", "addr", "show", "eth0"); err != nil || !strings.Contains(out, st.Pods[0].IP) {
		t.Errorf("lab exec %s -- ip addr: %v %s", st.Pods[0].Name, err, out)
	}
	if out := mustNetshift(t, "lab", "exec", "--name", name, "node-1", "--", "ovs-vsctl", "br-exists", "br-int"); out != "" {
		t.Errorf("lab exec node-1 ovs-vsctl: %q", out)
	}
	var node corev1.Node
	if err := labClient(t, name).Get(context.Background(), client.ObjectKey{Name: "node-2"}, &node); err != nil || node.Labels["zone"] != "b" {
		t.Errorf("node-2 label zone=b: %v %v", node.Labels, err)
	}
	out, err := netshift(t, "lab", "up", "--name", name)
	if err == nil || !strings.Contains(out, "already up") {
		t.Errorf("a second lab up over a running lab: %v %s", err, out)
	}
	if out, err := netshift(t, "lab", "up", "--name", "Bad_Name"); err == nil || !strings.Contains(out, "--name") {
		t.Errorf("bad name: %v %s", err, out)
	}
	if out, err := netshift(t, "lab", "up", "--name", "x", "--mtu", "1460"); err == nil || !strings.Contains(out, "--mtu: 1460 is outside 576..1450") {
		t.Errorf("--mtu above the underlay minus VXLAN: %v %s", err, out)
	}
}

// probeOnAnUntouchedLab (a step of TestDefaultLab): 20 s of probing: every
// long-lived connection alive, no short-lived or HTTPS failure, and the
// command exits 0.
func probeOnAnUntouchedLab(t *testing.T, name string) {
	out := mustNetshift(t, "lab", "probe", "--name", name, "--duration", "20s", "-o", "json")
	var r probe.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !r.OK || len(r.LongLived) != 6 || r.ShortLived.Attempts < 100 || r.HTTPS.Attempts < 20 || r.HTTPS.CertBytes <= 16384 {
		t.Fatalf("probe report: %s", out)
	}
	for _, l := range r.LongLived {
		if !l.Alive || l.Echoes < 1000 {
			t.Errorf("%s -> %s: alive=%v echoes=%d", l.From, l.To, l.Alive, l.Echoes)
		}
	}
	t.Logf("untouched: max gaps %v ms; overhead %.2f s CPU over %.0f s, %.0f MiB", gaps(r), r.Overhead.CPUSeconds, r.DurationMs/1000, r.Overhead.MaxRSSMiB)
}

// probeDetectsABrokenTunnel (a step of TestDefaultLab) is the control: node-1
// drops everything that arrives through its tunnel from node-2 for 2 s; the
// probe must see the gap on the connections that cross it.
func probeDetectsABrokenTunnel(t *testing.T, name string) {
	// The windows are the experiment: a baseline, 2 s of drops, and room for
	// the connections to resume and the gap to be measured.
	mustNetshift(t, "lab", "probe", "start", "--name", name)
	time.Sleep(probeQuiet)
	mustNetshift(t, "lab", "exec", "--name", name, "node-1", "--", "ovs-ofctl", "add-flow", "br-int", "priority=1000,in_port=tun2,actions=drop")
	time.Sleep(2 * time.Second)
	mustNetshift(t, "lab", "exec", "--name", name, "node-1", "--", "ovs-ofctl", "del-flows", "--strict", "br-int", "priority=1000,in_port=tun2")
	time.Sleep(probeQuiet + time.Second)
	r, err := stopProbe(name)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := lab.LoadState(name)
	nodeOf := map[string]string{}
	for _, p := range labPods(t, s) {
		nodeOf[p.Name] = p.Node
	}
	crossing := 0
	for _, l := range r.LongLived {
		from, to := nodeOf[l.From], nodeOf[l.To]
		// node-1 -> node-2 gets its echoes back through node-1's tun2.
		if from == "node-1" && to == "node-2" {
			crossing++
			if l.MaxGapMs < 1500 {
				t.Errorf("%s -> %s: longest gap %.0f ms while its tunnel was down for 2 s", l.From, l.To, l.MaxGapMs)
			}
		} else if from != "node-1" && to != "node-1" && l.MaxGapMs > 1000 {
			t.Errorf("%s (%s) -> %s (%s) does not cross the broken tunnel but saw a %.0f ms gap", l.From, from, l.To, to, l.MaxGapMs)
		}
	}
	if crossing == 0 {
		t.Fatalf("no connection crossed the broken tunnel: %+v", r.LongLived)
	}
	t.Logf("broken tunnel: max gaps %v ms", gaps(r))
}

// TestDownAfterACrashHalfway: `lab up` and its supervisor killed while the
// nodes start (a kubelet already runs); `lab down` still removes all they had
// created: namespaces, links, every daemon of the nodes and the control plane.
func TestDownAfterACrashHalfway(t *testing.T) {
	testenv.Require(t, missing)
	before := takeFootprint(t)
	cmd := exec.Command(binary, "lab", "up", "--name", "e2ecr", "--nodes", "4")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once a node's kubelet runs (its state lists it).
	var supervisor int
	waitFor(t, "lab up to get halfway", func() bool {
		s, err := lab.LoadState("e2ecr")
		if err != nil {
			return false
		}
		kubelet := false
		for _, p := range s.Processes {
			kubelet = kubelet || strings.HasPrefix(p.Role, "kubelet:")
			if p.Role == "supervisor" {
				supervisor = p.Pid
			}
		}
		return kubelet && supervisor != 0
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = syscall.Kill(supervisor, syscall.SIGKILL)
	_ = cmd.Wait()
	s, _ := lab.LoadState("e2ecr")
	t.Logf("killed with %d namespaces and %d processes recorded", len(s.Netns), len(s.Processes))
	mustNetshift(t, "lab", "down", "--name", "e2ecr")
	waitGone(t, before)
}

// evictedPodIsRemoved (a step of TestTwoNodeLab): a pod evicted through the
// Eviction API is stopped by its node's kubelet: gone from the API and from
// its node's runtime, its network namespace with it.
func evictedPodIsRemoved(t *testing.T, name string) {
	st := status(t, name)
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	victim := st.Pods[0]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: lab.PodNamespace}}
	if err := c.SubResource("eviction").Create(context.Background(), pod, &policyv1.Eviction{ObjectMeta: pod.ObjectMeta}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the evicted pod gone from the API and from its node's runtime", func() bool {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
		return err != nil && s.RuntimeNetns(context.Background(), lab.PodNamespace, victim.Name) == ""
	})
	if _, err := os.Stat(victim.Netns); !os.IsNotExist(err) {
		t.Errorf("the evicted pod's namespace %s is still there: %v", victim.Netns, err)
	}
	// Its DaemonSet replaces it, and the lab is healthy again.
	waitFor(t, "the replacement pod", func() bool { st := status(t, name); return st.Healthy && len(st.Pods) == 2 })
}

func labClient(t testing.TB, name string) client.WithWatch {
	t.Helper()
	c, err := labClientFor(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, what, 60*time.Second, cond)
}

// waitForWithin is waitFor with its own deadline.
func waitForWithin(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holdsFor checks cond over the whole window d and fails at its first
// breach: how a test says "nothing happens", which no event can signal.
func holdsFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := cond(); err != nil {
			t.Fatalf("expected %s: %v", what, err)
		}
	}
}

func gaps(r probe.Report) []float64 {
	var out []float64
	for _, l := range r.LongLived {
		out = append(out, float64(int(l.MaxGapMs*10))/10)
	}
	return out
}

// oneLabOfRealNodesAtATime (a step of TestTwoNodeLab): the machine joins one
// lab's underlay at a time; a second lab of real nodes is refused with the
// reason, removes what it had created, and leaves the first one working.
func oneLabOfRealNodesAtATime(t *testing.T, name string) {
	out, err := netshift(t, "lab", "up", "--name", "e2eb", "--nodes", "2", "--pods-per-node", "1")
	if err == nil || !strings.Contains(out, "another lab of real nodes holds 198.19.0.254") {
		t.Errorf("a second lab of real nodes: %v\n%s", err, out)
	}
	if _, err := lab.LoadState("e2eb"); err == nil {
		t.Error("the refused lab left its state behind")
	}
	if st := status(t, name); !st.Healthy {
		t.Errorf("lab %s unhealthy after the refused one: %+v", name, st)
	}
	everyPodReachesEveryOther(t, name)
}

// everyPodReachesEveryOther checks every pair of the lab's pods over TCP.
func everyPodReachesEveryOther(t *testing.T, name string) {
	t.Helper()
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	pods := labPods(t, s)
	for _, from := range pods {
		for _, to := range pods {
			if from.Name != to.Name {
				if err := lab.TCPCheck(from, to, 3*time.Second); err != nil {
					t.Errorf("%s -> %s over TCP: %v", from.Name, to.Name, err)
				}
			}
		}
	}
}

// labPods are the lab's workload pods with their network namespaces.
func labPods(t testing.TB, s *lab.State) []lab.PodSpec {
	t.Helper()
	pods, err := s.Pods(context.Background())
	if err != nil {
		t.Fatalf("the lab's pods: %v", err)
	}
	return pods
}
