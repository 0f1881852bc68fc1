package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/probe"
	"netshift.io/netshift/internal/lab/standin"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/zones"
)

// waitZones waits until the operator reports the layout converged.
func waitZones(t *testing.T, c client.Client, name string, layout zones.Mode) *v1alpha1.ZonesStatus {
	t.Helper()
	var st *v1alpha1.ZonesStatus
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var cn v1alpha1.NetshiftNetwork
		if err := c.Get(context.Background(), types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn); err == nil {
			st = cn.Status.Zones
			if st != nil && st.Current == string(layout) && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ZonesConverged) {
				return st
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var states v1alpha1.NetshiftNodeStateList
	_ = c.List(context.Background(), &states)
	for _, n := range states.Items {
		t.Logf("node %s: holds %+v, zoneRestart %+v", n.Name, n.Status.Holds, n.Status.ZoneRestart)
	}
	if st != nil {
		for _, h := range st.Held {
			// What CI prints is all there is to go on: the held node's side of it.
			t.Logf("held: node %s: %s", h.Node, h.Reason)
			logTail(t, name, 20, "nodes", h.Node, "ovn-controller.log")
			logTail(t, name, 20, "nodes", h.Node, "zone", "ic.log")
		}
	}
	logTail(t, name, 40, "commands.log")
	t.Fatalf("the lab did not converge to %s: %+v", layout, st)
	return nil
}

// logTail logs the last lines of one of the lab's files.
func logTail(t *testing.T, name string, lines int, path ...string) {
	t.Helper()
	s, err := lab.LoadState(name)
	if err != nil {
		return
	}
	data, err := os.ReadFile(s.Path(path...))
	if err != nil {
		t.Logf("%s: %v", filepath.Join(path...), err)
		return
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	all = all[max(0, len(all)-lines):]
	// A line each: the test tier's filter keeps only lines that carry the file:line prefix.
	for _, l := range all {
		t.Logf("%s: %s", filepath.Join(path...), l)
	}
}

// checkLayout asserts every node is annotated with its zone, uncordoned, and
// every pod reaches every other pod over TCP.
func checkLayout(t *testing.T, c client.Client, name string, layout zones.Mode) {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if want := zones.ZoneFor(layout, n.Name); n.Annotations[zones.ZoneAnnotation] != want {
			t.Errorf("node %s: zone %q, want %q", n.Name, n.Annotations[zones.ZoneAnnotation], want)
		}
		if n.Spec.Unschedulable {
			t.Errorf("node %s left cordoned after its move", n.Name)
		}
	}
	everyPodReachesEveryOther(t, name)
}

// noneBroken asserts every long-lived connection survived; requests that
// failed during a move (a new connection whose SYN fell into a move's gap) are
// logged with their reasons: the acceptance is about the connections.
func noneBroken(t testing.TB, what string, r probe.Report) {
	t.Helper()
	for _, l := range r.LongLived {
		if !l.Alive {
			t.Errorf("%s: long-lived %s -> %s died: %s", what, l.From, l.To, l.Error)
		}
	}
	if len(r.LongLived) == 0 {
		t.Errorf("%s: the probe measured nothing", what)
	}
	t.Logf("%s: short-lived %d of %d failed %v, HTTPS %d of %d failed %v", what, r.ShortLived.Failures, r.ShortLived.Attempts, r.ShortLived.Reasons,
		r.HTTPS.Failures, r.HTTPS.Attempts, r.HTTPS.Reasons)
}

// A legacy OVN lab upgraded to multizone (through single zone), with the
// operator and a moving node's plugin pod killed mid-upgrade, and moved back
// to single zone by creating the ConfigMap, under the probe, by the operator
// through the network plugin's objects (the lab's stand-in for ovnkube): every
// connection survives and every pod reaches every other.
func TestZoneMigrations(t *testing.T) {
	up(t, "zon", "--ovn", "--zones", "legacy")
	c := labClient(t, "zon")
	var killedOperator, killedPlugin int
	r := underProbe(t, "zon", func() {
		// Mid-upgrade, with node-2 labelled for the global zone and its new
		// plugin pod having the move run, the plugin pod and the operator are
		// killed; their kubelets start them again. The lab's lock on node-2's
		// moves holds that move until then.
		release := holdLabLock(t, "zon", "zone-move-node-2")
		mustNetshift(t, "lab", "upgrade-zones", "--name", "zon")
		waitFor(t, "node-2 labelled for the global zone, its new plugin pod started", func() bool {
			var n corev1.Node
			return c.Get(context.Background(), types.NamespacedName{Name: "node-2"}, &n) == nil && n.Labels[zones.ZoneLabel] == "global" &&
				n.Annotations[zones.ZoneAnnotation] == "" && newPluginPodRunning(c, "node-2") && runningPid("zon", "plugin:node-2") != 0
		})
		// While node-2's plugin pod is held unready, the rollout is not
		// blocked: a NetshiftNodePool that lets 3 nodes move at once shows in the
		// status within 2 s (node-3 starts beside node-2).
		pool := &v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: "zones"}, Spec: v1alpha1.NetshiftNodePoolSpec{MaxParallel: ptr.To(intstr.FromInt32(3))}}
		if err := c.Create(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
		created := time.Now()
		waitFor(t, "node-3 moving beside the held node-2 after the NetshiftNodePool's edit", func() bool {
			var cn v1alpha1.NetshiftNetwork
			return c.Get(context.Background(), types.NamespacedName{Name: v1alpha1.NetshiftNetworkName}, &cn) == nil && cn.Status.Zones != nil &&
				slices.Contains(cn.Status.Zones.Moving, "node-2") && slices.Contains(cn.Status.Zones.Moving, "node-3")
		})
		if took := time.Since(created); took > 2*time.Second {
			t.Errorf("the NetshiftNodePool's edit took %s to show in status.zones.moving while node-2 was held (want under 2 s)", took)
		} else {
			t.Logf("the NetshiftNodePool's edit was in status.zones.moving %d ms after it was written, node-2 held", took.Milliseconds())
		}
		if err := c.Delete(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the operator's and node-2's plugin pod's processes", func() bool {
			killedOperator, killedPlugin = runningPid("zon", "operator"), runningPid("zon", "plugin:node-2")
			return killedOperator > 1 && killedPlugin > 1
		})
		t.Logf("killing the operator (pid %d) and node-2's plugin pod (pid %d) mid-move", killedOperator, killedPlugin)
		for _, pid := range []int{killedPlugin, killedOperator} {
			if pid <= 1 {
				t.Fatalf("no process to kill (pid %d): the operator %d, node-2's plugin pod %d", pid, killedOperator, killedPlugin)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill %d: %v", pid, err)
			}
		}
		release()
		st := waitZones(t, c, "zon", zones.Multi)
		if st.Central != "Retired" {
			t.Errorf("multizone reached with the central zone %s", st.Central)
		}
	})
	for role, old := range map[string]int{"operator": killedOperator, "plugin:node-2": killedPlugin} {
		waitFor(t, role+" running again after it was killed", func() bool {
			p := runningPid("zon", role)
			return p > 1 && p != old
		})
	}
	noneBroken(t, "legacy -> multizone", r)
	t.Logf("legacy -> multizone: longest gap %.1f ms", maxGap(r))
	checkLayout(t, c, "zon", zones.Multi)
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: operator.Namespace, Name: zones.ConfigMapName}, &cm); !apierrors.IsNotFound(err) {
		t.Errorf("the upgrade's ConfigMap is still there: %v %v", cm.Data, err)
	}

	r = underProbe(t, "zon", func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName},
			Data: map[string]string{zones.KeyZoneMode: "singlezone"}}
		if err := c.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		if st := waitZones(t, c, "zon", zones.Single); st.Central != "Running" {
			t.Errorf("single zone reached with the central zone %s", st.Central)
		}
	})
	noneBroken(t, "multizone -> single zone", r)
	t.Logf("multizone -> single zone: longest gap %.1f ms", maxGap(r))
	checkLayout(t, c, "zon", zones.Single)
}

// holdLabLock takes one of the lab's locks (a zone move takes its node's)
// until the returned release.
func holdLabLock(t *testing.T, name, what string) (release func()) {
	t.Helper()
	st, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(st.Path(what+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	release = sync.OnceFunc(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
	t.Cleanup(release)
	return release
}

// newPluginPodRunning says whether node's plugin pod runs and is not ready:
// started after the node got its label, and busy with the move.
func newPluginPodRunning(c client.Client, node string) bool {
	var pods corev1.PodList
	if c.List(context.Background(), &pods, client.InNamespace(standin.Namespace), client.MatchingLabels{"app": standin.NodeApp}) != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil && !cs.Ready {
					return true
				}
			}
		}
	}
	return false
}

// runningPid is the pid of one of the lab's pods' processes, 0 while it has
// none (a container not started yet, or between two runs).
func runningPid(name, role string) int {
	st, err := lab.LoadState(name)
	if err != nil {
		return 0
	}
	pid, _ := st.NetshiftPid(context.Background(), role)
	return pid
}

// BenchmarkZoneMoves is `netshift lab zone-bench --direct` on a 3-node
// single-zone OVN lab with 2 pods per node: each node into its own zone and
// back, the probe around each move alone, through the network plugin's
// objects (label, plugin pod restart, the central Deployment scaled) and,
// beside it, by the lab alone (targets: a moving node's connections under
// 500 ms, the others under 100 ms, nothing broken). With -short, through
// the plugin's objects alone.
func BenchmarkZoneMoves(b *testing.B) {
	benchLab(b, "zbench", "--ovn")
	args := []string{"lab", "zone-bench", "--name", "zbench", "-o", "json"}
	if !testing.Short() {
		args = append(args, "--direct")
	}
	for b.Loop() {
		rep := zoneBench(b, args...)
		b.ReportMetric(rep.MaxMovingGapMs, "moving-maxgap-ms")
		b.ReportMetric(rep.MaxOthersGapMs, "others-maxgap-ms")
		b.ReportMetric(float64(rep.Broken), "broken")
		b.ReportMetric(float64(rep.Failures), "failed-requests")
		broken := rep.Broken
		if !testing.Short() {
			if rep.Direct == nil {
				b.Fatal("zone-bench --direct reported no direct path")
			}
			b.ReportMetric(rep.Direct.MaxMovingGapMs, "direct-moving-maxgap-ms")
			b.ReportMetric(rep.Direct.MaxOthersGapMs, "direct-others-maxgap-ms")
			broken += rep.Direct.Broken
		}
		if broken > 0 {
			b.Fatalf("%d long-lived connections broke during the zone moves (every connection must stay alive)", broken)
		}
	}
}

// zoneBench runs `lab zone-bench` with args and logs what it printed for people.
func zoneBench(b *testing.B, args ...string) lab.ZoneBenchReport {
	b.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("lab zone-bench: %v\n%s", err, errb.String())
	}
	var rep lab.ZoneBenchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		b.Fatal(err)
	}
	b.Logf("zone moves:\n%s", errb.String())
	return rep
}

// An ovn-ic that stops serving its zone (frozen here with SIGSTOP; seen in CI
// as an ovn-ic that no longer wrote to its southbound database) is found by
// the move, started again, and the move completes with every pod reaching
// every other.
func TestZoneMoveRestartsAStuckInterconnect(t *testing.T) {
	up(t, "zic", "--ovn")
	stuck := livePid(t, "zic", "ovn-ic:global")
	if stuck == 0 {
		t.Fatal("no ovn-ic for the global zone")
	}
	if err := syscall.Kill(stuck, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(stuck, syscall.SIGCONT) }()
	out := mustNetshift(t, "lab", "zone-move", "--name", "zic", "node-1", "node-1")
	if !strings.Contains(out, "zone global: its ovn-ic did not bind ts-node-1") {
		t.Errorf("the move did not say it restarted the global zone's ovn-ic:\n%s", out)
	}
	if p := livePid(t, "zic", "ovn-ic:global"); p == 0 || p == stuck {
		t.Errorf("the global zone's ovn-ic was not started again (pid %d, was %d)", p, stuck)
	}
	everyPodReachesEveryOther(t, "zic")
}
