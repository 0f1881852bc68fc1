package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/testenv"
)

// edit patches NetshiftNetwork "cluster" of a lab.
func edit(t testing.TB, c client.Client, patch string) {
	t.Helper()
	cn := &v1alpha1.NetshiftNetwork{}
	cn.Name = v1alpha1.NetshiftNetworkName
	if err := c.Patch(context.Background(), cn, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
}

// waitChange waits for the change to end and returns it.
func waitChange(t *testing.T, c client.Client) *v1alpha1.NetshiftNetwork {
	t.Helper()
	var cn v1alpha1.NetshiftNetwork
	waitFor(t, "the live change to end", func() bool {
		if c.Get(context.Background(), client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn) != nil || cn.Status.Change == nil {
			return false
		}
		return !cn.Status.Change.Phase.Active() && cn.Status.ObservedGeneration == cn.Generation
	})
	return &cn
}

// waitChangeSeeingCordons is waitChange that also says whether a node was
// seen cordoned while the change was scheduled (T0 set, not yet ended).
func waitChangeSeeingCordons(t testing.TB, c client.Client) (*v1alpha1.NetshiftNetwork, bool) {
	t.Helper()
	var cn v1alpha1.NetshiftNetwork
	cordoned := false
	waitFor(t, "the live change to end", func() bool {
		if c.Get(context.Background(), client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn) != nil || cn.Status.Change == nil {
			return false
		}
		if cn.Status.Change.Phase.Active() && cn.Status.Change.T0 != nil && !cordoned {
			for _, on := range labNodes(t, c) {
				cordoned = cordoned || on
			}
		}
		return !cn.Status.Change.Phase.Active() && cn.Status.ObservedGeneration == cn.Generation
	})
	return &cn, cordoned
}

// probeQuiet is the probe's measurement window before and after a change:
// its baseline of each connection's normal spacing, and room for a change's
// late gaps to show. It is what is measured, not a wait for an event.
const probeQuiet = 2 * time.Second

// underProbe runs change while the probe runs, and returns the probe's report.
func underProbe(t testing.TB, name string, change func()) probe.Report {
	t.Helper()
	mustNetshift(t, "lab", "probe", "start", "--name", name)
	time.Sleep(probeQuiet)
	change()
	time.Sleep(probeQuiet)
	r, err := stopProbe(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stopProbe stops the lab's background probe and reads its report (the
// JSON's end is the report's: the command may say more before it).
func stopProbe(name string) (probe.Report, error) {
	var r probe.Report
	out, _ := runNetshift("lab", "probe", "stop", "--name", name, "-o", "json")
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &r); err != nil {
		return r, fmt.Errorf("lab probe stop: %w\n%s", err, out)
	}
	return r, nil
}

func maxGap(r probe.Report) float64 {
	m := 0.0
	for _, l := range r.LongLived {
		m = max(m, l.MaxGapMs)
	}
	return m
}

func podMTUs(t testing.TB, s *lab.State) map[int]int {
	t.Helper()
	seen := map[int]int{}
	for _, p := range labPods(t, s) {
		seen[podMTU(t, p)]++
	}
	return seen
}

// podMTU is the MTU of a lab pod's eth0, read inside its network namespace.
func podMTU(t testing.TB, p lab.PodSpec) int {
	t.Helper()
	h, err := netdev.Open(p.Netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	m, err := h.MTU("eth0")
	if err != nil {
		t.Fatalf("pod %s: %v", p.Name, err)
	}
	return m
}

// TestLiveChanges: in plain VXLAN (on nodes laid out as CRI-O's, netshift-cni
// chained into a list the agent made beside the plugin's .conf), plain Geneve and OVN labs that came up
// whole (labCameUpWhole), with the probe running, the MTU goes down by 100
// and back up, and the tunnel port of the encapsulation in use changes; after
// each, every long-lived connection is alive and nothing failed. Then the lab
// goes and leaves nothing behind (labGoesLeavingNothing).
func TestLiveChanges(t *testing.T) {
	newPort := map[string]int{"vxlanPort": 4790, "genevePort": 6082}
	for _, mode := range []struct {
		name, args, portField string
		mtu                   int
	}{
		// Nodes laid out as CRI-O's, their plugin writing a .conf: netshift goes in with the
		// runtime-crio component and chains netshift-cni into a list made of the .conf, beside it.
		{"vxlan", "--tunnel vxlan --node-layout crio --cni-conf", "vxlanPort", 1450},
		{"geneve", "--tunnel geneve", "genevePort", 1442},
		{"ovn", "--ovn", "genevePort", 1442},
	} {
		t.Run(mode.name, func(t *testing.T) {
			testenv.Require(t, missing)
			before := takeFootprint(t)
			name := "e2ec" + mode.name[:2]
			labCameUpWhole(t, name, up(t, name, strings.Fields(mode.args)...))
			s, _ := lab.LoadState(name)
			netshiftCNIChained(t, s)
			c := labClient(t, name)
			ofports := map[string]int{}
			for _, n := range s.Topology.Nodes {
				tunnels, err := switchTunnels(s.OVSDB(n.Name))
				if err != nil {
					t.Fatal(err)
				}
				for _, tun := range tunnels {
					ofports[n.Name+"/"+tun.Name] = tun.OFPort
				}
			}
			changes := []struct{ what, patch string }{
				{"MTU -100", fmt.Sprintf(`{"spec":{"mtu":%d}}`, mode.mtu-100)},
				{"MTU +100", fmt.Sprintf(`{"spec":{"mtu":%d}}`, mode.mtu)},
			}
			// Both ports, in this order: the one of the encapsulation in use changes on every node,
			// the other is recorded with no node step.
			for _, f := range []string{"vxlanPort", "genevePort"} {
				changes = append(changes, struct{ what, patch string }{f, fmt.Sprintf(`{"spec":{%q:%d}}`, f, newPort[f])})
			}
			if mode.name == "ovn" {
				operatorDialsOVNOverSSL(t, c)
			}
			for _, ch := range changes {
				var cn *v1alpha1.NetshiftNetwork
				var cordoned bool
				r := underProbe(t, name, func() {
					edit(t, c, ch.patch)
					cn, cordoned = waitChangeSeeingCordons(t, c)
				})
				if cn.Status.Change.Phase != v1alpha1.PhaseSucceeded {
					t.Fatalf("%s: change %+v", ch.what, cn.Status.Change)
				}
				if mode.name == "ovn" && ch.what == "genevePort" && cn.Status.Change.Southbound != "Done" {
					t.Errorf("geneve port: the southbound Encap records (over ssl:) say %q, want Done", cn.Status.Change.Southbound)
				}
				// No change cordons a node that keeps up: during an MTU change's steps each
				// agent holds its node's pod set-ups off itself.
				if cordoned {
					t.Errorf("%s: nodes seen cordoned during the change: want none", ch.what)
				}
				if on := labNodes(t, c); slices.Contains(slices.Collect(maps.Values(on)), true) {
					t.Errorf("%s: cordons after the change: %v", ch.what, on)
				}
				if !r.OK {
					t.Errorf("%s: probe failed: %v", ch.what, r.Failed())
				}
				t.Logf("%s (%s): longest gap %.1f ms; probe %d short-lived, %d HTTPS", ch.what, cn.Status.Change.ID, maxGap(r), r.ShortLived.Attempts, r.HTTPS.Attempts)
				if !meta.IsStatusConditionFalse(cn.Status.Conditions, v1alpha1.NetshiftNetworkProgressing) || !meta.IsStatusConditionFalse(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded) {
					t.Errorf("%s: conditions %+v", ch.what, cn.Status.Conditions)
				}
				// Each node's steps carry when they were due, when they began and ended; a
				// tunnel port step when its transaction was committed. Status shows the worst skew.
				var states v1alpha1.NetshiftNodeStateList
				if err := c.List(context.Background(), &states); err != nil {
					t.Fatal(err)
				}
				timed := 0
				for _, st := range states.Items {
					if rep := st.Status.LiveChange; rep != nil && rep.ID == cn.Status.Change.ID {
						timed += len(rep.Steps)
						for _, sr := range rep.Steps {
							if sr.ScheduledAt == nil || sr.EndedAt == nil || sr.Action == netplugin.StepTunnelPort && sr.CommittedAt == nil {
								t.Errorf("%s: node %s step %s reports no schedule, end or commit: %+v", ch.what, st.Name, sr.Action, sr)
							}
						}
					}
				}
				out := mustNetshift(t, "--kubeconfig", s.Kubeconfig, "status")
				if i := strings.Index(out, "SKEW"); i >= 0 {
					t.Logf("%s: %s", ch.what, strings.SplitN(out[i:], "\n", 2)[0])
				} else if timed > 0 {
					t.Errorf("%s: %d timed steps, but netshift status shows no SKEW line:\n%s", ch.what, timed, out)
				}
				// Phase 3: the configuration new pods are set up from carries the applied values.
				want := livechange.NodeConfig(*cn.Status.Applied, cn.Spec.Encapsulation)
				for _, n := range s.Topology.Nodes {
					if f, err := nodeconfig.Read(s.NetworkConfigPath(n.Name)); err != nil || f.NodeNetworkConfig != want {
						t.Errorf("%s: node %s network configuration %+v, %v; want %+v", ch.what, n.Name, f, err, want)
					}
				}
			}
			if got := podMTUs(t, s); got[mode.mtu] != s.Options.Nodes*s.Options.PodsPerNode {
				t.Errorf("pod MTUs after down and up: %v, want all %d", got, mode.mtu)
			}
			if mode.name == "ovn" {
				// On the wire: the tunnel traffic uses the new port, and nothing the old one.
				mustNetshift(t, "lab", "probe", "start", "--name", name)
				onNew := udpPacketsTo(t, s.Topology.UnderlayNetns, 6082, time.Second)
				onOld := udpPacketsTo(t, s.Topology.UnderlayNetns, 6081, time.Second)
				_, _ = netshift(t, "lab", "probe", "stop", "--name", name)
				if onNew == 0 || onOld != 0 {
					t.Errorf("underlay packets to UDP 6082: %d, to 6081: %d; want traffic on the new port only", onNew, onOld)
				}
				t.Logf("underlay, 1 s each: %d Geneve packets to 6082, %d to 6081", onNew, onOld)
			}
			if mode.portField != "" {
				for _, n := range s.Topology.Nodes {
					tunnels, err := switchTunnels(s.OVSDB(n.Name))
					if err != nil {
						t.Fatal(err)
					}
					for _, tun := range tunnels {
						if want := newPort[mode.portField]; tun.DstPort != want || tun.OFPort != ofports[n.Name+"/"+tun.Name] {
							t.Errorf("node %s %s: dst_port %d ofport %d, want %d and the ofport it had (%d): changed in place",
								n.Name, tun.Name, tun.DstPort, tun.OFPort, want, ofports[n.Name+"/"+tun.Name])
						}
					}
				}
			}
			if mode.name == "ovn" {
				// After the tunnels were checked (ovn-controller follows the southbound records):
				// a chassis that registers again comes without the port, and the operator puts it back.
				sb := []string{"--db=" + s.SBDB()}
				uuid := strings.Fields(ovnSbctl(t, append(sb, "--bare", "--columns=_uuid", "find", "encap", "type=geneve")...))[0]
				ovnSbctl(t, append(sb, "remove", "encap", uuid, "options", "dst_port")...)
				waitFor(t, "the operator to set the Geneve port on the Encap record again", func() bool {
					return strings.TrimSpace(ovnSbctl(t, append(sb, "get", "encap", uuid, "options:dst_port")...)) == `"6082"`
				})
			}
			labGoesLeavingNothing(t, name, before)
		})
	}
}

func ovnSbctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ovn-sbctl", args...).Output()
	if err != nil && !strings.Contains(strings.Join(args, " "), "options:dst_port") {
		t.Fatalf("ovn-sbctl %v: %v", args, err)
	}
	return string(out)
}

// portHeldOnOneNode (a step of TestTwoNodeLab): the new port is taken by
// another process on one node: the preconditions fail on that node, Degraded
// names it, nothing changes on any node and nothing is left cordoned; once
// the port is free, the change is tried again and goes through.
func portHeldOnOneNode(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	var squatter net.PacketConn
	if err := netdev.InNetns(s.Topology.Nodes[1].Netns, func() (err error) {
		squatter, err = net.ListenPacket("udp", ":4791")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	edit(t, c, `{"spec":{"vxlanPort":4791}}`)
	cn := waitChange(t, c)
	deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded)
	if cn.Status.Change.Phase != v1alpha1.PhaseFailed || deg == nil || deg.Status != "True" ||
		!strings.Contains(deg.Message, "node node-2") || !strings.Contains(deg.Message, "UDP port 4791 is in use") {
		t.Fatalf("change %+v, Degraded %+v", cn.Status.Change, deg)
	}
	for _, n := range s.Topology.Nodes {
		tunnels, _ := switchTunnels(s.OVSDB(n.Name))
		for _, tun := range tunnels {
			if tun.DstPort != 0 {
				t.Errorf("node %s %s changed to %d although the preconditions failed", n.Name, tun.Name, tun.DstPort)
			}
		}
	}
	for _, n := range labNodes(t, c) {
		if n {
			t.Error("a node was left cordoned")
		}
	}
	squatter.Close()
	waitFor(t, "the retried change to go through", func() bool {
		var cur v1alpha1.NetshiftNetwork
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cur) == nil &&
			cur.Status.Applied != nil && cur.Status.Applied.VXLANPort == 4791
	})
}

func labNodes(t testing.TB, c client.Client) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	nodes := &nodeList{}
	if err := c.List(context.Background(), &nodes.NodeList); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		out[n.Name] = n.Spec.Unschedulable
	}
	return out
}

// abortBeforeT0 (a step of TestTwoNodeLab): node-2's agent is frozen, so the
// change waits in its preconditions (netshift status shows it waiting);
// `netshift abort` cancels it with nothing changed anywhere and puts the spec
// back.
func abortBeforeT0(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	agentPid := livePid(t, s.Options.Name, "agent:node-2")
	if err := syscall.Kill(agentPid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(agentPid, syscall.SIGCONT) }()
	edit(t, c, `{"spec":{"mtu":1300}}`)
	waitFor(t, "the change to wait for node-2", func() bool {
		out, _ := netshift(t, "--kubeconfig", s.Kubeconfig, "status")
		return strings.Contains(out, "Preconditions") && strings.Contains(out, "waiting for node-2")
	})
	out := mustNetshift(t, "--kubeconfig", s.Kubeconfig, "abort")
	if !strings.Contains(out, "aborted before T0") {
		t.Fatalf("abort: %s", out)
	}
	var cn v1alpha1.NetshiftNetwork
	if err := c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cn); err != nil {
		t.Fatal(err)
	}
	if cn.Status.Change.Phase != v1alpha1.PhaseAborted || *cn.Spec.MTU != 1450 || cn.Status.Applied.MTU != 1450 {
		t.Fatalf("after abort: phase %s, spec mtu %d, applied %d", cn.Status.Change.Phase, *cn.Spec.MTU, cn.Status.Applied.MTU)
	}
	// node-2's agent, thawed, finds the change gone: nothing changes on any
	// node, watched for two of its alignment periods.
	_ = syscall.Kill(agentPid, syscall.SIGCONT)
	holdsFor(t, 2*alignPeriod, "every pod's MTU to stay 1450 after an abort", func() error {
		if got := podMTUs(t, s); got[1450] != s.Options.Nodes*s.Options.PodsPerNode {
			return fmt.Errorf("pod MTUs %v", got)
		}
		return nil
	})
	for n, cordoned := range labNodes(t, c) {
		if cordoned {
			t.Errorf("node %s left cordoned", n)
		}
	}
}

func labClientFor(name string) (client.WithWatch, error) {
	s, err := lab.LoadState(name)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: operator.Scheme()})
}

// changeUnderProbe applies patch while the probe runs and returns the report
// once the change has ended (an error if it did not succeed).
func changeUnderProbe(name string, c client.Client, patch string) (probe.Report, error) {
	r, _, err := timedChangeUnderProbe(name, c, patch)
	return r, err
}

// timedChangeUnderProbe is changeUnderProbe that also says how long the
// change took, from the edit to its end.
func timedChangeUnderProbe(name string, c client.Client, patch string) (probe.Report, time.Duration, error) {
	var r probe.Report
	if out, err := runNetshift("lab", "probe", "start", "--name", name); err != nil {
		return r, 0, fmt.Errorf("%w: %s", err, out)
	}
	time.Sleep(probeQuiet)
	cn := &v1alpha1.NetshiftNetwork{}
	cn.Name = v1alpha1.NetshiftNetworkName
	start := time.Now()
	if err := c.Patch(context.Background(), cn, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		return r, 0, err
	}
	// Ten nodes on two cores have been seen to take over a minute for one change.
	const limit = 3 * time.Minute
	deadline := time.Now().Add(limit)
	for {
		if err := c.Get(context.Background(), client.ObjectKey{Name: cn.Name}, cn); err == nil && cn.Status.Change != nil &&
			cn.Status.ObservedGeneration == cn.Generation && !cn.Status.Change.Phase.Active() {
			break
		}
		if time.Now().After(deadline) {
			phase := "no change recorded"
			if cn.Status.Change != nil {
				phase = fmt.Sprintf("change %s %s: %s", cn.Status.Change.ID, cn.Status.Change.Phase, cn.Status.Change.Message)
			}
			_, _ = runNetshift("lab", "probe", "stop", "--name", name)
			return r, 0, fmt.Errorf("%s: the change did not end in %s (%s)", patch, limit, phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	time.Sleep(probeQuiet)
	r, err := stopProbe(name)
	if err != nil {
		return r, took, err
	}
	if cn.Status.Change.Phase != v1alpha1.PhaseSucceeded {
		return r, took, fmt.Errorf("%s: change ended %s: %s", patch, cn.Status.Change.Phase, cn.Status.Change.Message)
	}
	return r, took, nil
}

// quietUnderProbe runs the probe for d with no change: what the lab's
// traffic sees from the lab alone.
func quietUnderProbe(name string, d time.Duration) (probe.Report, error) {
	var r probe.Report
	if out, err := runNetshift("lab", "probe", "start", "--name", name); err != nil {
		return r, fmt.Errorf("%w: %s", err, out)
	}
	time.Sleep(d)
	return stopProbe(name)
}

// restartsDuringAChange (a step of TestDefaultLab): the operator is killed
// once T0 is set and node-2's agent is killed just after T0; both are
// restarted (as Kubernetes would), the change resumes from what the API server
// holds and succeeds, the restarted agent finishes its steps without repeating
// the ones it reported, and the probe's connections survive.
func restartsDuringAChange(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	pid := func(role string) int { return livePid(t, name, role) }
	oldOperator, oldAgent := pid("operator"), pid("agent:node-2")
	r := underProbe(t, name, func() {
		edit(t, c, `{"spec":{"mtu":1350}}`)
		var cn v1alpha1.NetshiftNetwork
		waitFor(t, "T0 to be set", func() bool {
			return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Change != nil && cn.Status.Change.T0 != nil
		})
		if err := syscall.Kill(oldOperator, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(cn.Status.Change.T0.Add(50 * time.Millisecond)))
		if err := syscall.Kill(oldAgent, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		end := waitChange(t, c)
		if end.Status.Change.Phase != v1alpha1.PhaseSucceeded || end.Status.Applied.MTU != 1350 {
			t.Fatalf("after the restarts: %+v, applied %+v", end.Status.Change, end.Status.Applied)
		}
	})
	if p := pid("operator"); p == 0 || p == oldOperator {
		t.Errorf("operator not restarted (pid %d)", p)
	}
	if got := podMTUs(t, s); got[1350] != s.Options.Nodes*s.Options.PodsPerNode {
		t.Errorf("pod MTUs: %v, want all 1350", got)
	}
	var nns v1alpha1.NetshiftNodeState
	if err := c.Get(context.Background(), client.ObjectKey{Name: "node-2"}, &nns); err != nil || nns.Status.LiveChange == nil {
		t.Fatalf("node-2 report: %v", err)
	}
	// Killed just after T0, node-2's agent runs its steps once the kubelet has
	// restarted it (about 1.5 s late). Until then its pods still send segments of
	// the old size, which the other nodes' pods (at the new MTU) cannot receive:
	// a TLS handshake begun in that window (the probe's certificate is larger
	// than a segment) can outlast its 3 s timeout. Every long-lived and short-lived
	// connection must survive; HTTPS failures are allowed only as TLS failures,
	// and only when node-2 was late.
	var late int32
	for _, st := range nns.Status.LiveChange.Steps {
		late = max(late, st.LateMs)
	}
	failed := r.Failed()
	if late >= 500 && r.HTTPS.Failures > 0 && r.HTTPS.Failures == r.HTTPS.TLSFailures {
		t.Logf("node-2's steps %d ms late (its agent restarting): %d of %d HTTPS requests failed their TLS handshake", late, r.HTTPS.Failures, r.HTTPS.Attempts)
		failed = failed[:0]
		for _, f := range r.Failed() {
			if !strings.Contains(f, "HTTPS requests failed") {
				failed = append(failed, f)
			}
		}
	}
	if len(failed) > 0 {
		t.Errorf("probe: %v", failed)
	}
	seen := map[v1alpha1.StepAction]int{}
	for _, st := range nns.Status.LiveChange.Steps {
		seen[st.Action]++
		if seen[st.Action] > 1 || st.Error != "" {
			t.Errorf("node-2 step %s reported twice or failed: %+v", st.Action, nns.Status.LiveChange.Steps)
		}
	}
	if len(seen) != 4 || !nns.Status.LiveChange.Done { // pods, host veths, node port, configuration
		t.Errorf("node-2 report: %+v", nns.Status.LiveChange)
	}
	t.Logf("longest gap %.1f ms with both restarts; node-2 steps %+v", maxGap(r), nns.Status.LiveChange.Steps)
}

// restartsBeforeT0 (a step of TestThreeNodeLab): the operator is killed
// while the preconditions are being checked, and node-3's agent is killed
// before it answered (it was stopped before the edit). Both come back; the change resumes from the API
// server (as its next attempt when the other replica leads), node-3 answers, T0 is set once, and the
// change succeeds with every pod on the new MTU.
func restartsBeforeT0(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	operatorPid, agentPid := livePid(t, name, "operator"), livePid(t, name, "agent:node-3")
	if err := syscall.Kill(agentPid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	edit(t, c, `{"spec":{"mtu":1400}}`)
	var cn v1alpha1.NetshiftNetwork
	waitFor(t, "the preconditions phase", func() bool {
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Change != nil &&
			cn.Status.Change.Phase == v1alpha1.PhasePreconditions
	})
	id := cn.Status.Change.ID
	before := operatorLeader(t, c)
	for _, pid := range []int{operatorPid, agentPid} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	end := waitChange(t, c)
	// Either replica may win the lease (and the one restarted here may win it and lose it
	// again on a loaded machine). The one on another node serves the time endpoint at another
	// address, and sets T0 on its own clock: it checks the preconditions again, as the change's
	// next attempt. The one restarted here carries on the same attempt.
	t.Logf("the operator led from %s before the kill, from %s after; the change ended as %s", before, operatorLeader(t, c), end.Status.Change.ID)
	if e := end.Status.Change; e.Generation != cn.Status.Change.Generation || e.Kind != v1alpha1.ChangeMTU ||
		e.Phase != v1alpha1.PhaseSucceeded || end.Status.Applied.MTU != 1400 {
		t.Fatalf("after the restarts: %+v, applied %+v (want change %s, or a later attempt of it, to succeed)", end.Status.Change, end.Status.Applied, id)
	}
	if p := livePid(t, name, "operator"); p == 0 || p == operatorPid {
		t.Errorf("operator not restarted (pid %d)", p)
	}
	if got := podMTUs(t, s); got[1400] != s.Options.Nodes*s.Options.PodsPerNode {
		t.Errorf("pod MTUs: %v, want all 1400", got)
	}
	for n, cordoned := range labNodes(t, c) {
		if cordoned {
			t.Errorf("node %s left cordoned", n)
		}
	}
}

// operatorLeader is the node whose operator replica holds the lease.
func operatorLeader(t *testing.T, c client.Client) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: operator.Namespace, Name: "netshift-operator"}, &lease); err != nil {
		t.Fatalf("the operator's lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil {
		return "nobody"
	}
	node, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return node
}

// udpPacketsTo counts, for d, the IPv4 UDP packets to port seen on any
// interface of the namespace (the lab's underlay): the wire check that a
// tunnel port change really moved the traffic.
func udpPacketsTo(t *testing.T, netns string, port int, d time.Duration) int {
	t.Helper()
	var fd int
	if err := netdev.InNetns(netns, func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 2048)
	count := 0
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil || n < 14+20+8 || buf[12] != 0x08 || buf[13] != 0x00 { // IPv4 only
			continue
		}
		ip := buf[14:n]
		ihl := int(ip[0]&0x0f) * 4
		if ip[0]>>4 != 4 || ip[9] != 17 || len(ip) < ihl+4 {
			continue
		}
		if int(ip[ihl+2])<<8|int(ip[ihl+3]) == port {
			count++
		}
	}
	return count
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// silentNodeConverges (a step of TestThreeNodeLab): node-2's agent stops answering after its
// preconditions passed. The other nodes apply the change at T0 and are not
// held back; past the answer timeout the change ends Failed, Degraded names
// node-2, applied is the new value and node-2 alone is cordoned (a pod set up
// there would get the MTU the others' paths no longer carry). When its agent
// comes back it runs its steps late, converging the node, and is uncordoned.
func silentNodeConverges(t *testing.T, name string) {
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	agentPid := livePid(t, s.Options.Name, "agent:node-2")
	edit(t, c, `{"spec":{"mtu":1350}}`)
	var cn v1alpha1.NetshiftNetwork
	waitFor(t, "T0 to be set", func() bool {
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cn) == nil && cn.Status.Change != nil && cn.Status.Change.T0 != nil
	})
	if err := syscall.Kill(agentPid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(agentPid, syscall.SIGCONT) }()
	end := waitChange(t, c)
	deg := meta.FindStatusCondition(end.Status.Conditions, v1alpha1.NetshiftNetworkDegraded)
	if end.Status.Change.Phase != v1alpha1.PhaseFailed || deg == nil || deg.Status != "True" || !strings.Contains(deg.Message, "node-2") ||
		end.Status.Applied.MTU != 1350 || len(end.Status.Change.Converging) != 1 {
		t.Fatalf("change %+v, Degraded %+v, applied %+v", end.Status.Change, deg, end.Status.Applied)
	}
	mtus := podMTUs(t, s)
	if mtus[1350] != 2 || mtus[1450] != 1 {
		t.Fatalf("pod MTUs while node-2 is silent: %v, want the two other nodes at 1350", mtus)
	}
	if on := labNodes(t, c); !on["node-2"] || on["node-1"] || on["node-3"] {
		t.Fatalf("cordons while node-2 is silent: %v, want node-2 only", labNodes(t, c))
	}
	_ = syscall.Kill(agentPid, syscall.SIGCONT)
	waitFor(t, "node-2 to converge", func() bool {
		var cur v1alpha1.NetshiftNetwork
		return c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &cur) == nil && len(cur.Status.Change.Converging) == 0 &&
			meta.IsStatusConditionFalse(cur.Status.Conditions, v1alpha1.NetshiftNetworkDegraded)
	})
	if got := podMTUs(t, s); got[1350] != 3 {
		t.Fatalf("pod MTUs after node-2 came back: %v", got)
	}
	if labNodes(t, c)["node-2"] {
		t.Fatal("node-2 still cordoned after converging")
	}
}

// TestAFailedStepIsRolledBackLive: with the default spec.onFailure (roll
// back, no node may fail), under the probe:
//   - an MTU change whose HostVethMTU step fails on every node (after each
//     set its pods' MTU) stops: every node is rolled back live at a new T0,
//     every pod is back at 1450, no node reboots (no Reboot operation, nothing
//     left cordoned), no connection breaks, and Degraded says the spec asks
//     for what was rolled back;
//   - a VXLAN port change whose TunnelPort step fails on node-2 alone stops
//     the same way: node-1, which had moved its tunnels to 4790, is back on
//     4789, as is every tunnel, and no long-lived connection broke (the two
//     nodes were cut off from each other until the rollback's T0);
//   - asked again by an edit (the faults were injected once), the port change
//     goes through.
func TestAFailedStepIsRolledBackLive(t *testing.T) {
	const name = "e2erb"
	up(t, name, "--nodes", "2", "--pods-per-node", "1",
		"--agent-arg", "node-1:--fail-step-once=HostVethMTU", "--agent-arg", "node-2:--fail-step-once=HostVethMTU",
		"--agent-arg", "node-2:--fail-step-once=TunnelPort")
	s, _ := lab.LoadState(name)
	c := labClient(t, name)
	rolledBack := func(what string, r probe.Report, cn *v1alpha1.NetshiftNetwork, failed string, nothingFails bool) {
		t.Helper()
		ch := cn.Status.Change
		if ch.Phase != v1alpha1.PhaseRolledBack || ch.Rollback == nil || !ch.Rollback.All || !strings.Contains(ch.Message, failed) {
			t.Fatalf("%s: change %+v, rollback %+v: want it rolled back everywhere, naming %q", what, ch, ch.Rollback, failed)
		}
		if deg := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded); deg == nil || deg.Status != metav1.ConditionTrue ||
			deg.Reason != v1alpha1.ReasonChangeRolledBack {
			t.Errorf("%s: Degraded %+v: the spec asks for what was rolled back", what, deg)
		}
		if nothingFails && !r.OK {
			t.Errorf("%s: probe failed: %v", what, r.Failed())
		}
		noneBroken(t, what, r)
		if on := labNodes(t, c); on["node-1"] || on["node-2"] {
			t.Errorf("%s: cordons after the rollback: %v", what, on)
		}
		for _, n := range []string{"node-1", "node-2"} {
			var nns v1alpha1.NetshiftNodeState
			if err := c.Get(context.Background(), client.ObjectKey{Name: n}, &nns); err != nil {
				t.Fatal(err)
			}
			if nns.Spec.Operation != nil || nns.Spec.LiveChange != nil || len(nns.Status.Holds) > 0 {
				t.Errorf("%s: node %s: operation %+v, plan %+v, holds %+v: nothing may be left, no reboot", what, n, nns.Spec.Operation, nns.Spec.LiveChange, nns.Status.Holds)
			}
		}
		var nodes corev1.NodeList
		if err := c.List(context.Background(), &nodes); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			if id := n.Annotations[hold.NodeAnnotation]; id != "" {
				t.Errorf("%s: node %s: a live change's hold %s is left", what, n.Name, id)
			}
		}
		var plan v1alpha1.NetshiftChangePlan
		if err := c.Get(context.Background(), client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the cluster's plan %+v (%v): nothing may be left", what, plan.Spec, err)
		}
		t.Logf("%s: %s; longest gap %.1f ms", what, ch.Message, maxGap(r))
	}

	var cn *v1alpha1.NetshiftNetwork
	r := underProbe(t, name, func() {
		edit(t, c, `{"spec":{"mtu":1350}}`)
		cn = waitChange(t, c)
	})
	// Both nodes fail the step at the same time; the rollback is decided on the first
	// failure the operator reads, which names one node or both.
	rolledBack("MTU 1450 -> 1350", r, cn, "HostVethMTU failed on purpose", true)
	if msg := cn.Status.Change.Message; !strings.Contains(msg, "node node-1: HostVethMTU") && !strings.Contains(msg, "node node-2: HostVethMTU") {
		t.Errorf("MTU 1450 -> 1350: %q names neither node's failure", msg)
	}
	if got := podMTUs(t, s); got[1450] != 2 || cn.Status.Applied.MTU != 1450 {
		t.Fatalf("pod MTUs after the rollback %v, applied %d: want every pod back at 1450", got, cn.Status.Applied.MTU)
	}

	r = underProbe(t, name, func() {
		edit(t, c, `{"spec":{"mtu":1450}}`) // what is applied: no change
		edit(t, c, `{"spec":{"vxlanPort":4790}}`)
		cn = waitChange(t, c)
	})
	// From T0 to the rollback's T0 node-1 sends on 4790 and node-2 listens on 4789: the pods
	// between them are cut off for that long (the change's lead and a step), as from a node that
	// did not take its step; a new connection tried then may fail, an established one waits.
	rolledBack("VXLAN port 4789 -> 4790", r, cn, "node node-2: TunnelPort", false)
	var node1 v1alpha1.NetshiftNodeState
	if err := c.Get(context.Background(), client.ObjectKey{Name: "node-1"}, &node1); err != nil || node1.Status.LiveChange == nil ||
		node1.Status.LiveChange.ID != cn.Status.Change.ID+"-rollback" || node1.Status.LiveChange.Failed {
		t.Fatalf("node-1's report %+v (%v): want its rollback done", node1.Status.LiveChange, err)
	}
	if err := tunnelsOn(s, 4789); err != nil {
		t.Errorf("after the rollback: %v", err)
	}

	edit(t, c, `{"spec":{"vxlanPort":4789}}`)
	edit(t, c, `{"spec":{"vxlanPort":4790}}`)
	if cn = waitChange(t, c); cn.Status.Change.Phase != v1alpha1.PhaseSucceeded || cn.Status.Applied.VXLANPort != 4790 ||
		!meta.IsStatusConditionFalse(cn.Status.Conditions, v1alpha1.NetshiftNetworkDegraded) {
		t.Fatalf("asked again: change %+v, applied %+v", cn.Status.Change, cn.Status.Applied)
	}
}

// livePid is the pid of the lab's live process in that role (0 if none).
func livePid(t *testing.T, name, role string) int {
	t.Helper()
	st, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	if role == "operator" || strings.HasPrefix(role, "agent:") {
		pid, err := st.NetshiftPid(context.Background(), role)
		if err != nil {
			t.Fatalf("pid of the lab's %s: %v", role, err)
		}
		return pid
	}
	for _, p := range st.Processes {
		if p.Role == role && p.Alive() {
			return p.Pid
		}
	}
	return 0
}

// TestClockCheckedAgainstTheElectedOperator: the agents, installed from
// config/lab with no time URL of their own, check their clocks against the
// elected operator's /time endpoint, which it advertises in their plans. A
// node whose clock is 200 ms off (a lab build's hook) fails its preconditions
// naming its clock; the change ends Failed with nothing changed, and the other
// node's report carries its measured offset.
func TestClockCheckedAgainstTheElectedOperator(t *testing.T) {
	up(t, "e2eck", "--nodes", "2", "--pods-per-node", "1", "--agent-arg", "node-2:--clock-offset=200ms")
	s, _ := lab.LoadState("e2eck")
	c := labClient(t, "e2eck")
	edit(t, c, `{"spec":{"mtu":1400}}`)
	end := waitChange(t, c)
	deg := meta.FindStatusCondition(end.Status.Conditions, v1alpha1.NetshiftNetworkDegraded)
	if end.Status.Change.Phase != v1alpha1.PhaseFailed || deg == nil || !strings.Contains(deg.Message, "node node-2") ||
		!strings.Contains(deg.Message, "clock differs from the operator's") || strings.Contains(deg.Message, "node node-1") {
		t.Fatalf("change %+v, Degraded %+v; want node-2's clock named, and only it", end.Status.Change, deg)
	}
	// node-2's answer ends the attempt, perhaps before node-1's came: the
	// change is tried again (every 15 s), and node-1 answers one of the tries.
	var nns v1alpha1.NetshiftNodeState
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		err := c.Get(context.Background(), client.ObjectKey{Name: "node-1"}, &nns)
		if err == nil && nns.Status.LiveChange != nil && nns.Status.LiveChange.ClockOffsetMicros != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-1 has not reported its clock's offset in 90 s (%v): %+v", err, nns.Status.LiveChange)
		}
	}
	r := nns.Status.LiveChange
	if r.ClockOffsetMicros == nil || *r.ClockOffsetMicros > 50000 || *r.ClockOffsetMicros < -50000 {
		t.Errorf("node-1 clock offset %v µs, want measured and within 50 ms (its warnings: %v)", r.ClockOffsetMicros, r.Warnings)
	}
	t.Logf("node-1 clock offset %d µs; node-2: %s", *r.ClockOffsetMicros, deg.Message)
	if got := podMTUs(t, s); got[1450] != 2 {
		t.Errorf("pod MTUs %v after failed preconditions, want both unchanged at 1450", got)
	}
}

// switchTunnels reads a lab node's tunnels through a connection of its own.
func switchTunnels(socket string) (tunnels []ovs.Tunnel, err error) {
	err = ovs.WithSwitch(context.Background(), socket, func(sw *ovs.Switch) error {
		tunnels, err = sw.Tunnels(context.Background())
		return err
	})
	return tunnels, err
}

// operatorDialsOVNOverSSL: the lab's OVN mode installs the operator with ssl:
// endpoints and the certificate Secret, as a cluster whose OVN databases
// take SSL only (the lab's central databases listen on pssl: alone).
func operatorDialsOVNOverSSL(t *testing.T, c client.Client) {
	t.Helper()
	var dep appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "netshift-system", Name: "netshift-operator"}, &dep); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--ovn-sb=ssl:", "--ovn-nb=ssl:", "--ovn-sb-client-cert=", "--ovn-nb-client-cacert="} {
		if !strings.Contains(args, want) {
			t.Errorf("the operator's arguments lack %s: %s", want, args)
		}
	}
}
