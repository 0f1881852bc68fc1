package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/netplugin/ovnkubernetes"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/zones"
)

// ovnKubernetesBinaries is the directory of OVN-Kubernetes' binaries the
// tests run the real plugin from; CI cannot have them (they are built from a
// repository the module proxy does not serve), so it is the one prerequisite
// whose absence a test skips under CI too, saying so.
func ovnKubernetesBinaries(t *testing.T) string {
	dir := os.Getenv("NETSHIFT_OVN_KUBERNETES")
	if dir == "" {
		t.Skip("skipped: NETSHIFT_OVN_KUBERNETES names no directory with OVN-Kubernetes' binaries (ovnkube, ovn-k8s-cni-overlay, ovn-kube-util); " +
			"the real OVN-Kubernetes cannot run without them, and CI cannot have them (see docs/lab.md)")
	}
	return dir
}

// TestOVNKubernetesLiveChanges: on three nodes whose network plugin is the
// real OVN-Kubernetes, first one zone per node, then every node in the
// central zone, with the probe running through each change and the restart
// of ovnkube's pods that follows it: the MTU goes down by 100 and back up,
// and the Geneve port goes from 6081 to 6090 and back. Every long-lived
// connection stays alive and no short-lived or HTTPS request fails; once
// ovnkube's pods run again, ovn-config, ovn-k8s-mp0, the service route, every
// gateway router's gateway_mtu, every pod's eth0, every zone's southbound
// Encap rows, every node's tunnels and gateway bridge flows carry the new
// values. No daemon of the lab died. After netshift is uninstalled, a new pod
// gets the MTU from ovnkube's own CNI.
func TestOVNKubernetesLiveChanges(t *testing.T) {
	dir := ovnKubernetesBinaries(t)
	for _, layout := range []string{"multi", "single"} {
		t.Run(layout, func(t *testing.T) {
			name := "e2eovn" + layout[:1]
			labCameUpWhole(t, name, up(t, name, "--ovn-kubernetes", dir, "--zones", layout))
			s, err := lab.LoadState(name)
			if err != nil {
				t.Fatal(err)
			}
			c := labClient(t, name)
			mtu := s.Options.MTU
			for _, want := range []int{mtu - 100, mtu} {
				cn, r := ovnKubernetesChange(t, name, c, fmt.Sprintf(`{"spec":{"mtu":%d}}`, want), func() { waitOVNKubernetesRolled(t, c, want, 0) })
				noRequestFailed(t, fmt.Sprintf("MTU %d", want), r)
				if cn.Status.Change.Phase != v1alpha1.PhaseSucceeded {
					t.Fatalf("MTU %d: change %+v", want, cn.Status.Change)
				}
				t.Logf("%s: MTU %d (%s), ovnkube's pods restarted: longest gap %.1f ms; probe %d short-lived (%d failed), %d HTTPS (%d failed)", layout, want,
					cn.Status.Change.ID, maxGap(r), r.ShortLived.Attempts, r.ShortLived.Failures, r.HTTPS.Attempts, r.HTTPS.Failures)
				ovnKubernetesCarries(t, s, layout, want)
				if got := podMTUs(t, s); len(got) != 1 || got[want] == 0 {
					t.Errorf("MTU %d: the pods' eth0 MTUs %v", want, got)
				}
			}
			ovnKubernetesPortChange(t, name, s, c, layout)
			noDaemonDied(t, name)
			out := mustNetshift(t, "uninstall", "--kubeconfig", s.Kubeconfig)
			if !strings.Contains(out, "netshift is uninstalled") {
				t.Fatalf("netshift uninstall said:\n%s", out)
			}
			if got := newPodMTU(t, name, c, s.Topology.Nodes[1].Name); got != mtu {
				t.Errorf("a pod created after netshift was uninstalled: eth0 MTU %d, want %d from ovnkube's CNI", got, mtu)
			}
		})
	}
}

// ovnKubernetesGenevePort is the port the test moves OVN-Kubernetes' tunnels to.
const ovnKubernetesGenevePort = 6090

// ovnKubernetesPortChange moves the Geneve port to ovnKubernetesGenevePort
// and back to 6081 under the probe. After each, once ovnkube's pods run
// again with ovn-config's port, every zone's southbound Encap rows, every
// node's tunnels and its gateway bridge's flows carry the port (6081: no
// dst_port anywhere).
func ovnKubernetesPortChange(t *testing.T, name string, s *lab.State, c client.Client, layout string) {
	t.Helper()
	for _, port := range []int{ovnKubernetesGenevePort, ovs.DefaultGenevePort} {
		patch := fmt.Sprintf(`{"spec":{"genevePort":%d}}`, port)
		cn, r := ovnKubernetesChange(t, name, c, patch, func() { waitOVNKubernetesRolled(t, c, s.Options.MTU, port) })
		noRequestFailed(t, fmt.Sprintf("Geneve port %d", port), r)
		if cn.Status.Change.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("Geneve port %d: change %+v", port, cn.Status.Change)
		}
		t.Logf("%s: Geneve port %d (%s), ovnkube's pods restarted: longest gap %.1f ms; probe %d short-lived (%d failed), %d HTTPS (%d failed)", layout,
			port, cn.Status.Change.ID, maxGap(r), r.ShortLived.Attempts, r.ShortLived.Failures, r.HTTPS.Attempts, r.HTTPS.Failures)
		ovnKubernetesTunnels(t, s, layout, port)
		everyPodReachesEveryOther(t, name)
	}
}

// ovnKubernetesChange makes a change under the probe, waits for it and for
// what follows it (rolled), and checks that no long-lived connection died.
func ovnKubernetesChange(t testing.TB, name string, c client.Client, patch string, rolled func()) (*v1alpha1.NetshiftNetwork, probe.Report) {
	t.Helper()
	var cn *v1alpha1.NetshiftNetwork
	r := underProbe(t, name, func() {
		edit(t, c, patch)
		cn, _ = waitChangeSeeingCordons(t, c)
		rolled()
		// The last node whose ovnkube pod restarted comes back at TCP's next retransmission.
		time.Sleep(ovnKubernetesRestartSettle)
	})
	noneBroken(t, patch, r)
	return cn, r
}

// noRequestFailed fails the test for a short-lived connection or HTTPS
// request that failed during a change.
func noRequestFailed(t *testing.T, what string, r probe.Report) {
	t.Helper()
	if r.ShortLived.Failures > 0 || r.HTTPS.Failures > 0 {
		t.Errorf("%s: %d short-lived connections and %d HTTPS requests failed", what, r.ShortLived.Failures, r.HTTPS.Failures)
	}
}

// noDaemonDied fails the test for every process of the lab that died (an
// ovs-vswitchd its monitor started again among them).
func noDaemonDied(t testing.TB, name string) {
	t.Helper()
	for _, p := range status(t, name).Processes {
		if !p.Alive || p.DiedPid != 0 {
			t.Errorf("lab %s: %s died (pid %d, now %d, alive %v)", name, p.Role, p.DiedPid, p.Pid, p.Alive)
		}
	}
}

// waitOVNKubernetesRolled waits until ovn-config says mtu (and port, unless
// 0) and every ovnkube pod was restarted since it did, and is ready.
func waitOVNKubernetesRolled(t testing.TB, c client.Client, mtu, port int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		why := ovnKubernetesNotRolled(ctx, c, mtu, port)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("OVN-Kubernetes not restarted with MTU %d: %s", mtu, why)
		}
		time.Sleep(time.Second)
	}
}

func ovnKubernetesNotRolled(ctx context.Context, c client.Client, mtu, port int) string {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ovnkubernetes.Namespace, Name: ovnkubernetes.ConfigMap}, &cm); err != nil {
		return err.Error()
	}
	if cm.Data[ovnkubernetes.KeyMTU] != strconv.Itoa(mtu) {
		return "ovn-config says mtu " + cm.Data[ovnkubernetes.KeyMTU]
	}
	if port != 0 && cm.Data[ovnkubernetes.KeyPort] != strconv.Itoa(port) {
		return "ovn-config says encap_port " + cm.Data[ovnkubernetes.KeyPort]
	}
	if cm.Annotations[ovnkubernetes.RestartPending] != "" {
		return "ovnkube's restart is still pending"
	}
	var ds appsv1.DaemonSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: ovnkubernetes.Namespace, Name: "ovnkube-node"}, &ds); err != nil {
		return err.Error()
	}
	st := ds.Status
	if st.ObservedGeneration < ds.Generation || st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberReady != st.DesiredNumberScheduled {
		return fmt.Sprintf("daemonset ovnkube-node: %d of %d updated, %d ready", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberReady)
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ovnkubernetes.Namespace, Name: "ovnkube-control-plane"}, &dep); err != nil {
		return err.Error()
	}
	if dep.Status.ObservedGeneration < dep.Generation || dep.Status.UpdatedReplicas != dep.Status.Replicas || dep.Status.ReadyReplicas != dep.Status.Replicas {
		return fmt.Sprintf("deployment ovnkube-control-plane: %d of %d updated, %d ready", dep.Status.UpdatedReplicas, dep.Status.Replicas, dep.Status.ReadyReplicas)
	}
	return ""
}

// ovnKubernetesCarries checks every node's ovn-k8s-mp0, the service route
// ovnkube-node locks to the MTU, and the gateway router's gateway_mtu in the
// node's zone's database (its own, or the central one).
func ovnKubernetesCarries(t *testing.T, s *lab.State, layout string, mtu int) {
	t.Helper()
	for _, n := range s.Topology.Nodes {
		if got := linkMTUsIn(t, n.Netns)[ovnkubernetes.ManagementPort]; got != mtu {
			t.Errorf("node %s: %s MTU %d, want %d", n.Name, ovnkubernetes.ManagementPort, got, mtu)
		}
		routes, err := exec.Command("ip", "-n", n.Netns, "route").Output()
		if err != nil {
			t.Fatal(err)
		}
		locked := slices.ContainsFunc(strings.Split(string(routes), "\n"), func(l string) bool {
			return strings.Contains(l, "dev "+ovnkubernetes.GatewayBridge) && strings.HasSuffix(strings.TrimSpace(l), fmt.Sprintf("mtu %d", mtu))
		})
		if !locked {
			t.Errorf("node %s: no route through %s with MTU %d:\n%s", n.Name, ovnkubernetes.GatewayBridge, mtu, routes)
		}
		out, err := ovnKubernetesDB(s, n, layout, "ovn-nbctl", "get", "logical_router_port", "rtoj-GR_"+n.Name, "options:gateway_mtu")
		if err != nil || strings.Trim(strings.TrimSpace(string(out)), `"`) != strconv.Itoa(mtu) {
			t.Errorf("node %s: gateway_mtu of rtoj-GR_%s: %s (%v), want %d", n.Name, n.Name, out, err, mtu)
		}
	}
}

// ovnKubernetesDB runs an OVN tool (ovn-nbctl, ovn-sbctl) on the databases
// of node's zone: its own, or the central zone's, which the lab serves on
// node-1's address.
func ovnKubernetesDB(s *lab.State, n lab.NodeSpec, layout, tool string, args ...string) ([]byte, error) {
	port := map[string]string{"ovn-nbctl": "nb", "ovn-sbctl": "sb"}[tool]
	db := "unix:" + s.Path("nodes", n.Name, "ovn-kubernetes", "ovn", "ovn"+port+"_db.sock")
	netns := ""
	if layout != "multi" {
		db = fmt.Sprintf("tcp:%s:%s", s.Topology.Nodes[0].UnderlayIP, map[string]string{"nb": "6641", "sb": "6642"}[port])
		netns = s.Topology.Nodes[0].Netns
	}
	cmd := append([]string{tool, "--db=" + db, "--timeout=10"}, args...)
	if netns != "" {
		cmd = append([]string{"ip", "netns", "exec", netns}, cmd...)
	}
	return exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
}

// ovnKubernetesTunnels checks that every zone's southbound Encap rows (each
// node's own in multizone), every node's Geneve tunnels (ovn-controller's)
// and the gateway bridge's Geneve flows (ovnkube-node's) carry port; the
// default port is named nowhere. ovn-controller builds the tunnels within
// seconds of the rows.
func ovnKubernetesTunnels(t *testing.T, s *lab.State, layout string, port int) {
	t.Helper()
	var why string
	deadline := time.Now().Add(time.Minute)
	for {
		why = ""
		for _, n := range s.Topology.Nodes {
			if layout == "multi" || n.Name == s.Topology.Nodes[0].Name {
				out, err := ovnKubernetesDB(s, n, layout, "ovn-sbctl", "--bare", "--columns=chassis_name,options", "find", "encap", "type=geneve")
				if w := portsNamed(string(out), err, port, len(s.Topology.Nodes)); w != "" {
					why += fmt.Sprintf("\nthe southbound Encap rows of %s's zone: %s", n.Name, w)
				}
			}
			out, err := exec.Command("ip", "netns", "exec", n.Netns, "ovs-vsctl", "--db=unix:"+s.Path("nodes", n.Name, "db.sock"),
				"--bare", "--columns=name,options", "find", "interface", "type=geneve").CombinedOutput()
			if w := portsNamed(string(out), err, port, len(s.Topology.Nodes)-1); w != "" {
				why += fmt.Sprintf("\nnode %s: tunnels: %s", n.Name, w)
			}
			flows, err := exec.Command("ovs-ofctl", "dump-flows", "--no-stats", "unix:"+s.Path("nodes", n.Name, ovnkubernetes.GatewayBridge+".mgmt")).CombinedOutput()
			if err != nil || !strings.Contains(string(flows), fmt.Sprintf("tp_dst=%d", port)) {
				why += fmt.Sprintf("\nnode %s: no flow of %s on tp_dst=%d (%v)", n.Name, ovnkubernetes.GatewayBridge, port, err)
			}
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(2 * time.Second)
	}
}

// portsNamed says what is wrong with rows (each a line of name and options,
// as --bare prints them) for port: each of want rows names dst_port=port, or
// none names a dst_port for the default port.
func portsNamed(rows string, err error, port, want int) string {
	named := fmt.Sprintf("dst_port=%d", port)
	switch {
	case err != nil:
		return fmt.Sprintf("%v: %s", err, rows)
	case port == ovs.DefaultGenevePort && strings.Contains(rows, "dst_port="):
		return "a dst_port is left at the default port:\n" + rows
	case port == ovs.DefaultGenevePort && strings.Count(rows, "csum=") < want:
		return fmt.Sprintf("want %d rows:\n%s", want, rows)
	case port != ovs.DefaultGenevePort && strings.Count(rows, named) != want:
		return fmt.Sprintf("want %s on each of %d:\n%s", named, want, rows)
	}
	return ""
}

// newPodMTU creates a pod on node and reads its eth0's MTU.
func newPodMTU(t *testing.T, name string, c client.Client, node string) int {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	p := tenantPod("late", node, nil)
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s never ran: %+v", p.Name, p.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
	s, _ := lab.LoadState(name)
	netns := s.RuntimeNetns(ctx, p.Namespace, p.Name)
	if netns == "" {
		t.Fatalf("pod %s: no network namespace from its node's runtime", p.Name)
	}
	return linkMTUsIn(t, netns)["eth0"]
}

// TestOVNKubernetesZoneMoves: three nodes on the real OVN-Kubernetes move
// from its legacy layout (no interconnect, central databases) to single zone,
// to multizone and back to single zone, each by the operator through
// OVN-Kubernetes' own objects (its workloads' OVN_ENABLE_INTERCONNECT, the
// nodes' zone labels and ovnkube-node's pods, ovnkube-master's scale) with
// the probe running: every long-lived connection stays alive, every node's
// k8s.ovn.org/zone-name annotation, which only ovnkube-node writes, names the
// zone of each layout, every pod reaches every other, and no daemon of the
// lab died. A node moved back into the central zone has lost the mark
// ovnkube-node v1.1 leaves on a node that left it (else the central zone
// takes it for remote and its pods lose the network).
func TestOVNKubernetesZoneMoves(t *testing.T) {
	dir := ovnKubernetesBinaries(t)
	name := "e2eovnz"
	labCameUpWhole(t, name, up(t, name, "--ovn-kubernetes", dir, "--zones", "legacy"))
	c := labClient(t, name)
	ovnKubernetesInterconnect(t, c, false)
	// At this commit ovnkube-node annotates its node even without interconnect, with the central zone's name.
	checkLayout(t, c, name, zones.Single)
	if st := waitZonesReported(t, c, zones.Legacy); st.Phase != "Disabled" {
		t.Errorf("a legacy lab without the zone controller: phase %s", st.Phase)
	}
	singleZone := func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName},
			Data: map[string]string{zones.KeyZoneMode: "singlezone"}}
		if err := c.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		what    string
		start   func()
		layout  zones.Mode
		central string
	}{
		{"legacy -> single zone", func() {
			singleZone() // definitive: the upgrade stops at single zone
			mustNetshift(t, "lab", "upgrade-zones", "--name", name)
		}, zones.Single, "Running"},
		{"single zone -> multizone", func() {
			if err := c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName}}); err != nil {
				t.Fatal(err)
			}
		}, zones.Multi, "Retired"},
		{"multizone -> single zone", singleZone, zones.Single, "Running"},
	}
	for _, step := range steps {
		var took time.Duration
		r := underProbe(t, name, func() {
			start := time.Now()
			step.start()
			if st := waitZones(t, c, name, step.layout); st.Central != step.central {
				t.Errorf("%s: reached with the central zone %s, want %s", step.what, st.Central, step.central)
			}
			took = time.Since(start)
			// A moved node's connections come back at TCP's next retransmission, which backs off.
			time.Sleep(ovnKubernetesSettle)
		})
		noneBroken(t, step.what, r) // requests that fell into a moving node's gap are counted there, and in BenchmarkOVNKubernetes
		t.Logf("%s on OVN-Kubernetes: %s; longest gap %.1f ms", step.what, took.Round(time.Second), maxGap(r))
		ovnKubernetesInterconnect(t, c, true)
		checkLayout(t, c, name, step.layout)
		if step.layout == zones.Single {
			noneMarkedRemote(t, c)
		}
	}
	noDaemonDied(t, name)
}

// noneMarkedRemote checks that no node in the central zone carries the mark
// ovnkube-node leaves on a node that left it.
func noneMarkedRemote(t *testing.T, c client.Client) {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if v, ok := n.Annotations[zones.RemoteZoneMigrated]; ok && n.Annotations[zones.ZoneAnnotation] == zones.GlobalZone {
			t.Errorf("node %s is in the central zone still marked %s=%s", n.Name, zones.RemoteZoneMigrated, v)
		}
	}
}

// ovnKubernetesSettle is how long the probe runs on after a zone move, and
// ovnKubernetesRestartSettle after ovnkube's pods were restarted.
const (
	ovnKubernetesSettle        = 45 * time.Second
	ovnKubernetesRestartSettle = 20 * time.Second
)

// waitZonesReported waits until the operator reports the layout.
func waitZonesReported(t *testing.T, c client.Client, layout zones.Mode) *v1alpha1.ZonesStatus {
	t.Helper()
	var st *v1alpha1.ZonesStatus
	waitFor(t, "the operator reporting the "+string(layout)+" layout", func() bool {
		var cn v1alpha1.NetshiftNetwork
		if c.Get(context.Background(), client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn) != nil || cn.Status.Zones == nil {
			return false
		}
		st = cn.Status.Zones
		return st.Current == string(layout)
	})
	return st
}

// ovnKubernetesInterconnect checks that every container of OVN-Kubernetes'
// workloads says interconnect is on (or off).
func ovnKubernetesInterconnect(t *testing.T, c client.Client, on bool) {
	t.Helper()
	want := strconv.FormatBool(on)
	ctx := context.Background()
	var templates []corev1.PodTemplateSpec
	for _, name := range []string{"ovnkube-control-plane", ovnkubernetes.CentralDeployment} {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ovnkubernetes.Namespace, Name: name}, &d); err != nil {
			t.Fatal(err)
		}
		templates = append(templates, d.Spec.Template)
	}
	var ds appsv1.DaemonSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: ovnkubernetes.Namespace, Name: "ovnkube-node"}, &ds); err != nil {
		t.Fatal(err)
	}
	for _, tpl := range append(templates, ds.Spec.Template) {
		for _, ctr := range tpl.Spec.Containers {
			for _, e := range ctr.Env {
				if e.Name == ovnkubernetes.EnvInterconnect && e.Value != want {
					t.Errorf("container %s: %s=%s, want %s", ctr.Name, e.Name, e.Value, want)
				}
			}
		}
	}
}
