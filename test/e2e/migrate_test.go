package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
)

// migrate runs `lab migrate -o json` and returns its report; progress lines
// (standard error) go to the log.
func migrate(tb testing.TB, name string, count int, args ...string) (lab.MigrateReport, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"lab", "migrate", "--name", name, "--count", fmt.Sprint(count), "-o", "json"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("lab migrate: %v\n%s", err, errb.String())
	}
	var rep lab.MigrateReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		tb.Fatalf("lab migrate -o json: %v\n%s", err, out.String())
	}
	return rep, errb.String()
}

// A VM moves between node-1 and node-2 and back, per-port and direct: every
// migration ends with its traffic flowing again (the command fails otherwise);
// per-port targets are ready before the VM resumes, and a per-port migration
// loses no datagram at the resume nor at the completion (the source pod's
// deletion and the port's hand-over to the target alone); direct targets wait
// for their tap; nothing is left behind.
func TestVMMigration(t *testing.T) {
	up(t, "mig", "--ovn", "--pods-per-node", "1")
	rep, progress := migrate(t, "mig", 2)
	t.Logf("lab migrate:\n%s", progress)
	if rep.PerPort.Migrations != 4 || rep.Direct.Migrations != 4 {
		t.Fatalf("migrations per-port %d, direct %d, want 4 each", rep.PerPort.Migrations, rep.Direct.Migrations)
	}
	for _, m := range rep.PerPort.Each {
		if !m.ReadyBeforeResume {
			t.Errorf("per-port %s -> %s: the target's port was not ready before the VM resumed", m.From, m.To)
		}
		if m.LostAtResume != 0 {
			t.Errorf("per-port %s -> %s: %d datagrams lost at the resume, want 0", m.From, m.To, m.LostAtResume)
		}
		if m.LostAtCompletion != 0 {
			t.Errorf("per-port %s -> %s: %d datagrams lost at the completion (hand-over %.0f ms), want 0", m.From, m.To, m.LostAtCompletion, m.HandOverMs)
		}
	}
	for _, m := range rep.Direct.Each {
		if m.ReadyBeforeResume {
			t.Errorf("direct %s -> %s: reported ready before its tap existed", m.From, m.To)
		}
	}
	if rep.PerPort.Sent < 100 || rep.Direct.Sent < 100 {
		t.Errorf("too little traffic to judge: %d and %d datagrams", rep.PerPort.Sent, rep.Direct.Sent)
	}

	s := nothingLeftOfTheVMs(t, "mig")
	t.Run("TenantsCannotSteerPlugging", func(t *testing.T) { tenantsCannotSteerPlugging(t, s) })
}

// nothingLeftOfTheVMs checks that no VM pod, VM logical port, plugged port,
// tap or port bridge is left in the lab, and returns its state.
func nothingLeftOfTheVMs(t *testing.T, name string) *lab.State {
	t.Helper()
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := labClient(t, name).List(context.Background(), &pods, client.MatchingLabels{"app": "vm"}); err != nil || len(pods.Items) != 0 {
		t.Errorf("VM pods left: %d %v", len(pods.Items), err)
	}
	out, err := exec.Command("ovn-nbctl", "--db="+s.NBDB(), "lsp-list", "ls-vm").CombinedOutput()
	if err != nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("logical ports left on ls-vm (want only its router port): %s %v", out, err)
	}
	for _, n := range s.Topology.Nodes {
		var plugged []plug.Plugged
		err := ovs.WithSwitch(context.Background(), s.OVSDB(n.Name), func(sw *ovs.Switch) (err error) {
			plugged, err = sw.Plugged(context.Background())
			return err
		})
		if err != nil || len(plugged) != 0 {
			t.Errorf("node %s: still plugged %+v %v", n.Name, plugged, err)
		}
		links, _ := exec.Command("ip", "-n", n.Netns, "-o", "link", "show").CombinedOutput()
		if strings.Contains(string(links), ": tap") || strings.Contains(string(links), ": pbr-") {
			t.Errorf("node %s: VM devices left:\n%s", n.Name, links)
		}
	}
	return s
}

// tenantsCannotSteerPlugging plays a tenant's attacks on the lab's real
// nodes, with pods their kubelets run: a pod of a namespace not opted in, one
// naming the VM namespace's port (by its ID and by its bridge's prefix),
// another port's tap before it exists, or a 120 KB ID, plugs nothing on the
// node, and its pod's condition says why in a bounded message.
func tenantsCannotSteerPlugging(t *testing.T, s *lab.State) {
	c := labClient(t, "mig")
	ctx := context.Background()
	victimPort := "lab-victim-0001"
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "outsider"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "squatter", Labels: map[string]string{plug.PortSpecOptInLabel: plug.PortSpecEnabled},
			Annotations: map[string]string{plug.PortIDsAnnotation: "squat-*"}}},
	} {
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	node := s.Topology.Nodes[0].Name
	spec := func(id, tap string) string {
		if tap != "" {
			return fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0a","tap":%q}`, id, tap)
		}
		return fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0a"}`, id)
	}
	attacks := []struct{ ns, name, spec, reason, says string }{
		{"outsider", "lock", spec("outsider-1", ""), v1alpha1.ReasonPlugRefused, "namespace outsider is not opted in"},
		{"squatter", "by-id", spec(victimPort, ""), v1alpha1.ReasonPlugRefused, "not a port of namespace squatter"},
		{"squatter", "by-prefix", spec("lab-victim-squat", ""), v1alpha1.ReasonPlugRefused, "not a port of namespace squatter"},
		{"squatter", "by-tap", spec("squat-1", plug.DefaultTap(victimPort)), v1alpha1.ReasonInvalidPort, "derives from the port ID alone"},
		{"squatter", "huge-id", spec(strings.Repeat("x", 120<<10), ""), v1alpha1.ReasonInvalidPort, "must be 1 to 64 letters"},
	}
	for _, a := range attacks {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: a.ns, Annotations: map[string]string{plug.PortSpecAnnotation: a.spec}},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c",
				Image: images.WorkloadRef, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/sleep", "3600"}}}}}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range attacks {
		var last corev1.PodCondition
		waitForWithin(t, fmt.Sprintf("pod %s/%s refused", a.ns, a.name), time.Minute, func() bool {
			var pod corev1.Pod
			if err := c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: a.name}, &pod); err != nil {
				return false
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == plug.ReadyCondition {
					last = cond
				}
			}
			return last.Reason == a.reason && strings.Contains(last.Message, a.says)
		})
		if len(last.Message) > 1100 {
			t.Errorf("pod %s/%s: a message of %d bytes", a.ns, a.name, len(last.Message))
		}
	}
	err := ovs.WithSwitch(ctx, s.OVSDB(node), func(sw *ovs.Switch) error {
		plugged, err := sw.Plugged(ctx)
		if err == nil && len(plugged) != 0 {
			t.Errorf("node %s: the tenant's pods plugged %+v", node, plugged)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"outsider", "squatter"} {
		if err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkVMMigration is `netshift lab migrate --count 10` in a 3-node OVN
// lab: per-port and direct plugging side by side (target: per-port loses
// nothing, which fails the benchmark, and its longest gap is under 50 ms).
// With -short, 2 migrations per mode.
func BenchmarkVMMigration(b *testing.B) {
	benchLab(b, "migb", "--ovn", "--pods-per-node", "1")
	for b.Loop() {
		rep, progress := migrate(b, "migb", smallest(10, 2))
		data, _ := json.Marshal(struct {
			PerPort, Direct any
		}{map[string]any{"migrations": rep.PerPort.Migrations, "lost": rep.PerPort.Lost, "lostAtResume": rep.PerPort.LostAtResume,
			"lostAtCompletion": rep.PerPort.LostAtCompletion, "maxGapMs": rep.PerPort.MaxGapMs, "sent": rep.PerPort.Sent},
			map[string]any{"migrations": rep.Direct.Migrations, "lost": rep.Direct.Lost, "lostAtResume": rep.Direct.LostAtResume,
				"lostAtCompletion": rep.Direct.LostAtCompletion, "maxGapMs": rep.Direct.MaxGapMs, "sent": rep.Direct.Sent}})
		b.Logf("migrations: %s", data)
		for _, line := range strings.Split(strings.TrimSpace(progress), "\n") {
			if strings.Contains(line, "lost 0 (") {
				continue // the log of a benchmark is cut short: only the migrations that lost something
			}
			b.Log(line)
		}
		b.ReportMetric(float64(rep.PerPort.Lost), "perport-lost")
		b.ReportMetric(rep.PerPort.MaxGapMs, "perport-maxgap-ms")
		b.ReportMetric(float64(rep.Direct.Lost), "direct-lost")
		b.ReportMetric(rep.Direct.MaxGapMs, "direct-maxgap-ms")
		b.ReportMetric(float64(rep.PerPort.LostBeforeResume), "perport-lost-before-resume")
		b.ReportMetric(float64(rep.PerPort.LostAtCompletion), "perport-lost-at-completion")
		b.ReportMetric(float64(rep.Direct.LostAtCompletion), "direct-lost-at-completion")
		b.ReportMetric(rep.PerPort.HandOverMsP50, "perport-handover-p50-ms")
		b.ReportMetric(rep.Direct.HandOverMsP50, "direct-handover-p50-ms")
		if rep.PerPort.Lost > 0 {
			b.Fatalf("per-port plugging lost %d datagrams (%d at the resume, %d at the completion): it must lose none",
				rep.PerPort.Lost, rep.PerPort.LostAtResume, rep.PerPort.LostAtCompletion)
		}
	}
}
