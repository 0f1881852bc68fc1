package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/netdev"
)

// TestThreeNodeFaultLab: a cluster operator's bad day on a 3-node lab with
// a pod per node, node-1's agent made to fail its first TunnelPort step: a
// pod with IPv6, a node with no agent and a powered-off node, a rollback
// with a silent node, an abort while a node's watch lags, and the API server
// stopped across the report window.
func TestThreeNodeFaultLab(t *testing.T) {
	const name = "e2eft"
	up(t, name, "--nodes", "3", "--pods-per-node", "1", "--agent-arg", "node-1:--fail-step-once=TunnelPort")
	runSteps(t, name, []labStep{
		{"AnMTUBelowIPv6sLeastIsRefusedWhileAPodHasIPv6", ipv6KeepsTheMTUAbove1280},
		{"ANodeWithNoAgentAndAPoweredOffNodeHoldNothingBack", downNodesHoldNothingBack},
		{"ADecidedRollbackStartsAtOnceBesideASilentNode", decidedRollbackBesideASilentNode},
		{"NoNodeRunsAStepOfAnAbortedChange", abortWithALaggingWatch},
		{"TheAPIServerStoppedAcrossTheReportWindow", apiServerAwayAcrossTheReportWindow},
		{"EveryAgentFrozenPastTheReportWindow", agentsFrozenPastTheReportWindow},
	})
}

// ipv6KeepsTheMTUAbove1280: node-1's pod gets a ULA IPv6 address beside its
// IPv4 one, and node-2's own port into the pod network (br-int) one of its
// own. A dry run of an MTU of 1200 (under IPv6's 1280, where the kernel
// removes a link's IPv6 addresses) finds both, naming the pod on node-1 and
// the port on node-2; the change itself stops at the first node that answers
// with its problem, and nothing changes: every pod keeps 1450 and the pod's
// address stays.
func ipv6KeepsTheMTUAbove1280(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	var pod lab.PodSpec
	for _, p := range labPods(t, s) {
		if p.Node == "node-1" {
			pod = p
		}
	}
	if out, err := exec.Command("nsenter", "--net="+pod.Netns, "ip", "addr", "add", "fd00:99::1/64", "dev", "eth0", "nodad").CombinedOutput(); err != nil {
		t.Fatalf("add an IPv6 address to pod %s: %v: %s", pod.Name, err, out)
	}
	// node-2's own port into the pod network, br-int, gets one too, for a while.
	node2 := s.Topology.Nodes[1].Netns
	if out, err := exec.Command("ip", "-n", node2, "addr", "add", "fd00:98::2/64", "dev", "br-int", "nodad").CombinedOutput(); err != nil {
		t.Fatalf("add an IPv6 address to node-2's br-int: %v: %s", err, out)
	}
	defer func() { _ = exec.Command("ip", "-n", node2, "addr", "del", "fd00:98::2/64", "dev", "br-int").Run() }()
	podProblem := "MTU 1200 is below IPv6's least MTU of 1280, and pod " + lab.PodNamespace + "/" + pod.Name + " eth0: fd00:99::1/64 has IPv6"
	portProblem := "MTU 1200 is below IPv6's least MTU of 1280, and the node's port br-int: fd00:98::2/64 has IPv6"
	// The dry run waits for every node: both problems, each on its node's row.
	out, err := netshift(t, "change", "mtu", "1200", "--dry-run", "--kubeconfig="+s.Kubeconfig)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !rowHas(out, "node-1", podProblem) || !rowHas(out, "node-2", portProblem) {
		t.Fatalf("dry run of MTU 1200: %v\n%s\nwant exit 3, node-1's row naming pod %s and node-2's naming br-int", err, out, pod.Name)
	}
	// The change stops at the first node that answers with a problem: one of the two.
	edit(t, c, `{"spec":{"mtu":1200}}`)
	cn := waitChange(t, c)
	ch := cn.Status.Change
	named := strings.Contains(ch.Message, "node node-1: "+podProblem) || strings.Contains(ch.Message, "node node-2: "+portProblem)
	if ch.Phase != v1alpha1.PhaseFailed || ch.T0 != nil || !named || !strings.HasPrefix(ch.Message, "preconditions failed, nothing was changed") ||
		cn.Status.Applied.MTU != 1450 {
		t.Fatalf("change %+v, applied %+v: want its preconditions failed, naming node-1's pod %s or node-2's br-int, nothing changed", ch, cn.Status.Applied, pod.Name)
	}
	edit(t, c, `{"spec":{"mtu":1450}}`)
	if got := podMTUs(t, s); got[1450] != len(labPods(t, s)) {
		t.Fatalf("pod MTUs %v after a refused change", got)
	}
	if held, err := netdev.HasIPv6(pod.Netns, []string{"eth0"}); err != nil || !strings.Contains(held, "fd00:99::1/64") {
		t.Fatalf("pod %s's IPv6 address after the refused change: %q (%v)", pod.Name, held, err)
	}
	t.Logf("refused: %s", ch.Message)
}

// rowHas reports whether a line of a table starts with node and holds text.
func rowHas(table, node, text string) bool {
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, node+" ") && strings.Contains(l, text) {
			return true
		}
	}
	return false
}

// downNodesHoldNothingBack: a Node labelled Windows (no kubelet, no agent)
// and node-3 powered off (its kubelet and agent stopped until the node
// lifecycle controller marks it NotReady, past spec.downNodeGrace) do not
// hold an MTU change back: it succeeds on node-1 and node-2, names win-1
// outside and node-3 down, and cordons nothing. Powered on again, node-3
// catches up by itself: every pod at 1350, nothing cordoned, the down list
// empty.
func downNodesHoldNothingBack(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	win := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-1", Labels: map[string]string{corev1.LabelOSStable: "windows"}}}
	if err := c.Create(context.Background(), win); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(context.Background(), win) }()
	edit(t, c, `{"spec":{"downNodeGrace":"5s"}}`)
	defer edit(t, c, `{"spec":{"downNodeGrace":"1m"}}`)
	kubelet, agent := livePid(t, name, "kubelet:node-3"), livePid(t, name, "agent:node-3")
	for _, pid := range []int{kubelet, agent} {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	}
	waitForWithin(t, "node-3 NotReady", 2*time.Minute, func() bool {
		var n corev1.Node
		return c.Get(context.Background(), client.ObjectKey{Name: "node-3"}, &n) == nil && !nodeReady(n)
	})
	edit(t, c, `{"spec":{"mtu":1350}}`)
	cn := waitChange(t, c)
	ch := cn.Status.Change
	if ch.Phase != v1alpha1.PhaseSucceeded || cn.Status.Applied.MTU != 1350 || fmt.Sprint(ch.Outside) != "[win-1]" || fmt.Sprint(ch.Down) != "[node-3]" || ch.Nodes != 2 {
		t.Fatalf("change %+v, applied %+v: want it Succeeded on node-1 and node-2, win-1 outside, node-3 down", ch, cn.Status.Applied)
	}
	if on := cordoned(t, c); len(on) > 0 {
		t.Errorf("nodes %v cordoned: a node that is down is kept free of pods by its taints, and takes no pool slot", on)
	}
	for _, p := range labPods(t, s) {
		if want := map[bool]int{true: 1450, false: 1350}[p.Node == "node-3"]; podMTU(t, p) != want {
			t.Errorf("pod %s on %s has MTU %d while node-3 is down, want %d", p.Name, p.Node, podMTU(t, p), want)
		}
	}
	for _, pid := range []int{kubelet, agent} {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	waitForWithin(t, "node-3 to catch up", 2*time.Minute, func() bool {
		var cur v1alpha1.NetshiftNetwork
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cur) == nil && len(cur.Status.Change.Down) == 0
	})
	if got := podMTUs(t, s); got[1350] != 3 {
		t.Fatalf("pod MTUs after node-3 caught up: %v", got)
	}
	if on := slices.DeleteFunc(cordoned(t, c), func(n string) bool { return n == "win-1" }); len(on) > 0 {
		t.Errorf("nodes %v left cordoned", on)
	}
	everyPodReachesEveryOther(t, name)
}

// cordoned are the lab's nodes cordoned now, by name.
func cordoned(t *testing.T, c client.Client) []string {
	t.Helper()
	var out []string
	for n, on := range labNodes(t, c) {
		if on {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// decidedRollbackBesideASilentNode: a VXLAN port change 4789 -> 4790 in which
// node-1's TunnelPort step fails (its agent's fault hook) while node-2's
// agent is frozen from before T0. node-1's failure decides the outcome (no
// node may fail): the rollback starts within seconds of T0, not after
// node-2's report window, and node-3, which moved at T0, is back on 4789 at
// once. Thawed, node-2 runs the rollback late; the change ends RolledBack,
// every tunnel on 4789, nothing cordoned, and no long-lived connection broke.
func decidedRollbackBesideASilentNode(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	agent2 := livePid(t, name, "agent:node-2")
	var rollingBackAt, t0 time.Time
	r := underProbe(t, name, func() {
		edit(t, c, `{"spec":{"vxlanPort":4790}}`)
		cn := waitT0(t, c, v1alpha1.ChangeVXLANPort, 4790)
		t0 = cn.Status.Change.T0.Time
		if err := syscall.Kill(agent2, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(agent2, syscall.SIGCONT) }()
		waitFor(t, "the rollback", func() bool {
			if c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, cn) == nil && cn.Status.Change.Phase == v1alpha1.PhaseRollingBack {
				rollingBackAt = time.Now()
				return true
			}
			return !cn.Status.Change.Phase.Active()
		})
		_ = syscall.Kill(agent2, syscall.SIGCONT)
		waitForWithin(t, "the change to end", 3*time.Minute, func() bool {
			return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, cn) == nil && !cn.Status.Change.Phase.Active() &&
				len(cn.Status.Change.Converging) == 0
		})
	})
	if rollingBackAt.IsZero() || rollingBackAt.Sub(t0) > 10*time.Second {
		t.Fatalf("the rollback began %s after T0: the outcome was decided by node-1's failure", rollingBackAt.Sub(t0))
	}
	cn := waitChange(t, c)
	if ch := cn.Status.Change; ch.Phase != v1alpha1.PhaseRolledBack || cn.Status.Applied.VXLANPort != 4789 {
		t.Fatalf("change %+v, applied %+v: want RolledBack", ch, cn.Status.Applied)
	}
	if err := tunnelsOn(s, 4789); err != nil {
		t.Error(err)
	}
	if on := cordoned(t, c); len(on) > 0 {
		t.Errorf("nodes %v left cordoned", on)
	}
	noneBroken(t, "a rollback beside a silent node", r)
	t.Logf("rollback began %s after T0; %s", rollingBackAt.Sub(t0).Round(time.Millisecond), cn.Status.Change.Message)
	edit(t, c, `{"spec":{"vxlanPort":4789}}`)
}

// throttleAPIToNode slows what the API server sends node (a watch that
// lags, as on a busy or distant control plane): an htb class of 64 kbit/s
// on the underlay's port toward the node, for packets from the API server's
// port. undo removes it.
func throttleAPIToNode(t *testing.T, s *lab.State, node string) (undo func()) {
	t.Helper()
	u, err := url.Parse(kubeServer(t, s))
	if err != nil {
		t.Fatal(err)
	}
	var port string
	for _, n := range s.Topology.Nodes {
		if n.Name == node {
			port = n.UnderlayPort
		}
	}
	tc := func(args ...string) error {
		out, err := exec.Command("ip", append([]string{"netns", "exec", s.Topology.UnderlayNetns, "tc"}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("tc %v: %v: %s", args, err, out)
		}
		return nil
	}
	for _, args := range [][]string{
		{"qdisc", "add", "dev", port, "root", "handle", "1:", "htb", "default", "10"},
		{"class", "add", "dev", port, "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"},
		{"class", "add", "dev", port, "parent", "1:", "classid", "1:20", "htb", "rate", "64kbit", "ceil", "64kbit"},
		{"filter", "add", "dev", port, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "sport", u.Port(), "0xffff", "flowid", "1:20"},
	} {
		if err := tc(args...); err != nil {
			_ = tc("qdisc", "del", "dev", port, "root")
			t.Fatal(err)
		}
	}
	return func() { _ = tc("qdisc", "del", "dev", port, "root") }
}

func kubeServer(t *testing.T, s *lab.State) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("the lab's kubeconfig: %v", err)
	}
	return cfg.Host
}

// abortWithALaggingWatch: node-3's traffic from the API server is throttled
// and held behind a backlog, so that its watch brings it the plan's
// withdrawal seconds late; a VXLAN port change 4789 -> 4790 is scheduled and
// then aborted before T0. Whatever
// node-3's cache still shows at T0, no node runs a step of the aborted
// change: every tunnel stays on 4789, node-3's report names no step, the
// status says nothing was changed, and under the probe no long-lived
// connection broke.
func abortWithALaggingWatch(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	var cn *v1alpha1.NetshiftNetwork
	var id string
	r := underProbe(t, name, func() { cn, id = abortBehindALaggingWatch(t, s, c) })
	if ch := cn.Status.Change; ch.Phase != v1alpha1.PhaseAborted || len(ch.Converging) != 0 || cn.Status.Applied.VXLANPort != 4789 ||
		meta.IsStatusConditionTrue(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded) {
		t.Fatalf("change %s %+v, applied %+v, conditions %+v", id, ch, cn.Status.Applied, cn.Status.Conditions)
	}
	noneBroken(t, "an abort behind a lagging watch", r)
	everyPodReachesEveryOther(t, name)
}

// abortBehindALaggingWatch lags node-3's watch, schedules the change, lags
// the watch again once node-3 has T0, aborts, and checks past T0 that no node
// ran a step; it returns the network then.
func abortBehindALaggingWatch(t *testing.T, s *lab.State, c client.Client) (*v1alpha1.NetshiftNetwork, string) {
	t.Helper()
	undo := throttleAPIToNode(t, s, "node-3")
	defer undo()
	// Bytes that node-3's watch of its own state must bring before anything written after
	// them, as behind a busy control plane: first so that the plan reaches node-3 some 3 s
	// late, which T0's lead (twice the slowest delivery) leaves room for the abort in; then,
	// once node-3 has T0, so that the abort's withdrawal reaches it some 12 s late, past T0.
	filler := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}}
	fill := func(n int) {
		value := "null"
		if n > 0 {
			value = fmt.Sprintf("%q", strings.Repeat("x", n))
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.netshift.io/backlog":%s}}}`, value)
		if err := c.Patch(context.Background(), filler, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	defer fill(0)
	fill(24 << 10)
	edit(t, c, `{"spec":{"vxlanPort":4790}}`)
	cn := waitT0(t, c, v1alpha1.ChangeVXLANPort, 4790)
	id, t0 := cn.Status.Change.ID, cn.Status.Change.T0.Time
	time.Sleep(time.Second) // T0 reaches node-3 (the first backlog is gone by now)
	fill(96 << 10)
	out := mustNetshift(t, "--kubeconfig", s.Kubeconfig, "abort")
	if !strings.Contains(out, "aborted before T0") {
		t.Fatalf("abort %s (T0 in %s): %s", id, time.Until(t0).Round(time.Millisecond), out)
	}
	// Past T0, by which node-3's cache still showed the plan.
	time.Sleep(time.Until(t0) + 3*time.Second)
	undo()
	holdsFor(t, 5*time.Second, "no step of the aborted change on any node", func() error {
		for _, n := range s.Topology.Nodes {
			var nns v1alpha1.NetshiftNodeState
			if err := c.Get(context.Background(), client.ObjectKey{Name: n.Name}, &nns); err != nil {
				return err
			}
			if rep := nns.Status.LiveChange; rep != nil && rep.ID == id && len(rep.Steps) > 0 {
				return fmt.Errorf("node %s ran %+v of aborted change %s", n.Name, rep.Steps, id)
			}
		}
		return tunnelsOn(s, 4789)
	})
	if err := c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, cn); err != nil {
		t.Fatal(err)
	}
	return cn, id
}

// apiServerAwayAcrossTheReportWindow: the lab's kube-apiserver is stopped
// just after T0 of an MTU change 1350 -> 1300, for longer than the operator's
// answer timeout (30 s), and started again. The nodes ran their steps at T0
// and report them once it answers: the change ends Succeeded, the applied
// MTU is every pod's, no node is cordoned, Degraded is False, and under the
// probe no long-lived connection broke.
func apiServerAwayAcrossTheReportWindow(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	api := livePid(t, name, "kube-apiserver")
	var end v1alpha1.NetshiftNetwork
	r := underProbe(t, name, func() {
		edit(t, c, `{"spec":{"mtu":1300}}`)
		cn := waitT0(t, c, v1alpha1.ChangeMTU, 1300)
		time.Sleep(time.Until(cn.Status.Change.T0.Time) + 50*time.Millisecond)
		if err := syscall.Kill(api, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(api, syscall.SIGCONT) }()
		time.Sleep(40 * time.Second)
		_ = syscall.Kill(api, syscall.SIGCONT)
		waitForWithin(t, "the change to end with every node in step", 4*time.Minute, func() bool {
			return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &end) == nil && end.Status.Change.ID == cn.Status.Change.ID &&
				!end.Status.Change.Phase.Active() && len(end.Status.Change.Converging) == 0
		})
	})
	noneBroken(t, "the API server stopped across the report window", r)
	ch := end.Status.Change
	if ch.Phase != v1alpha1.PhaseSucceeded || end.Status.Applied.MTU != 1300 || meta.IsStatusConditionTrue(end.Status.Conditions, v1alpha1.NetshiftNetworkDegraded) {
		t.Fatalf("change %+v, applied %+v: want Succeeded at 1300, as every node is", ch, end.Status.Applied)
	}
	if got := podMTUs(t, s); got[1300] != 3 {
		t.Fatalf("pod MTUs %v", got)
	}
	if on := cordoned(t, c); len(on) > 0 {
		t.Errorf("nodes %v left cordoned", on)
	}
	t.Logf("after the API server came back: %s", ch.Message)
}

// waitT0 waits for a change of kind to value to be scheduled (the last
// change, ended, has a T0 too) and returns the network then.
func waitT0(t *testing.T, c client.Client, kind v1alpha1.ChangeKind, to int32) *v1alpha1.NetshiftNetwork {
	t.Helper()
	var cn v1alpha1.NetshiftNetwork
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Change != nil {
			if ch := cn.Status.Change; ch.Kind == kind && ch.To == to && ch.Phase.Active() && ch.T0 != nil {
				return &cn
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no T0 of a %s change to %d in 3m: the change is %+v", kind, to, cn.Status.Change)
		}
	}
}

// tunnelsOn says which tunnel of a VXLAN lab's switches is not on port, if
// any (one with no port of its own is on VXLAN's, 4789).
func tunnelsOn(s *lab.State, port int) error {
	for _, n := range s.Topology.Nodes {
		tunnels, err := switchTunnels(s.OVSDB(n.Name))
		if err != nil {
			return err
		}
		for _, tun := range tunnels {
			if cmp.Or(tun.DstPort, 4789) != port {
				return fmt.Errorf("node %s: tunnel %s on port %d, want %d", n.Name, tun.Name, tun.DstPort, port)
			}
		}
	}
	return nil
}

// agentsFrozenPastTheReportWindow: every agent is frozen just after T0 of an
// MTU change 1300 -> 1280 (what a control plane away looks like to them),
// for longer than the answer timeout. The change ends Failed with the three
// converging, status.applied already at 1280 (where they converge), and one
// node cordoned at a time (the default pool allows one). Thawed (or
// restarted by their kubelets' liveness probes), the agents report their
// steps late: the change is Succeeded, naming them late, every pod at 1280,
// nothing cordoned, and under the probe no long-lived connection broke.
func agentsFrozenPastTheReportWindow(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	var agents []int
	for _, n := range s.Topology.Nodes {
		agents = append(agents, livePid(t, name, "agent:"+n.Name))
	}
	var end v1alpha1.NetshiftNetwork
	r := underProbe(t, name, func() { end = frozenPastTheReportWindow(t, c, agents) })
	noneBroken(t, "every agent frozen past the report window", r)
	if ch := end.Status.Change; len(ch.Late) != 3 || end.Status.Applied.MTU != 1280 || meta.IsStatusConditionTrue(end.Status.Conditions, v1alpha1.NetshiftNetworkDegraded) {
		t.Fatalf("change %+v, applied %+v", ch, end.Status.Applied)
	}
	if got := podMTUs(t, s); got[1280] != 3 {
		t.Fatalf("pod MTUs %v", got)
	}
	waitFor(t, "no node cordoned", func() bool { return len(cordoned(t, c)) == 0 })
	t.Logf("%s", end.Status.Change.Message)
}

// frozenPastTheReportWindow changes the MTU to 1280, freezes the agents just
// after T0 until the change gave up on them, checks what it recorded then,
// thaws them and returns the network once the change Succeeded.
func frozenPastTheReportWindow(t *testing.T, c client.Client, agents []int) v1alpha1.NetshiftNetwork {
	t.Helper()
	edit(t, c, `{"spec":{"mtu":1280}}`)
	cn := waitT0(t, c, v1alpha1.ChangeMTU, 1280)
	time.Sleep(time.Until(cn.Status.Change.T0.Time) + 50*time.Millisecond)
	for _, pid := range agents {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
		defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	}
	var failed v1alpha1.NetshiftNetwork
	waitForWithin(t, "the change to give up on its silent nodes", 2*time.Minute, func() bool {
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &failed) == nil && failed.Status.Change.ID == cn.Status.Change.ID &&
			!failed.Status.Change.Phase.Active()
	})
	if ch := failed.Status.Change; ch.Phase != v1alpha1.PhaseFailed || len(ch.Converging) != 3 || failed.Status.Applied.MTU != 1280 {
		t.Fatalf("change %+v, applied %+v: want Failed, the three nodes converging to 1280, which is what is applied", ch, failed.Status.Applied)
	}
	time.Sleep(2 * time.Second) // the cordons of silent nodes
	if on := cordoned(t, c); len(on) != 1 {
		t.Errorf("nodes %v cordoned while silent: the default pool allows one at once", on)
	}
	for _, pid := range agents {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	var end v1alpha1.NetshiftNetwork
	waitForWithin(t, "the change to succeed, late", 3*time.Minute, func() bool {
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &end) == nil && end.Status.Change.Phase == v1alpha1.PhaseSucceeded
	})
	return end
}
