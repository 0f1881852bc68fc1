package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
)

// TestAgentLeavesPooledPortsToNetshiftCNI, with a real API server and a real
// switch: a deleted pod's port that netshift-cni wired (its sandbox record
// names the pod and the port) is left to netshift-cni's DEL; once the DEL
// parks it, the agent keeps it until it has been parked for the node's TTL,
// then removes it and its device. A wired port whose DEL never comes is
// unplugged after the grace; a port netshift-cni did not wire, at once.
func TestAgentLeavesPooledPortsToNetshiftCNI(t *testing.T) {
	testenv.Require(t, envMissing)
	sw := ovstest.Start(t)
	ctx := context.Background()
	c := env.Client
	node, ns := "park-1", "pooled"
	for _, o := range []client.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	records := t.TempDir()
	const ttl, grace = 3 * time.Second, 4 * time.Second
	stop := startAgentWith(t, node, sw, CNIInstall{Pool: &cni.PoolConfig{StateDir: records, ParkedDevices: 4}, ParkedTTL: ttl, DelGrace: grace})
	defer stop()

	// Only the operator may record a pod's pooled port.
	operator, err := client.New(env.OperatorConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// pooledPod makes a pod with a pool's record and waits until the agent plugged its port.
	pooledPod := func(name, id, mac string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{plug.PoolAnnotation: fmt.Sprintf(`{"id":%q,"mac":%q}`, id, mac)}}})
		if err := operator.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+"'s port plugged", func() bool { pl, ok := sw.PluggedPort(id); return ok && pl.Owner == ns+"/"+name })
		return p
	}
	// wired writes netshift-cni's sandbox record of a pod (its on-node format).
	wired := func(sandbox, pod, id string) string {
		t.Helper()
		path := filepath.Join(records, sandbox+".json")
		data, _ := json.Marshal(map[string]string{"pod": ns + "/" + pod, "portID": id, "mode": "per-port", "tap": plug.DefaultTap(id), "netns": "/proc/1/ns/net"})
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stillPluggedFor := func(what, id, owner string, d time.Duration) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if pl, ok := sw.PluggedPort(id); !ok || pl.Owner != owner {
				t.Fatalf("%s: port %s is %+v (plugged %v), want it still plugged for %q", what, id, pl, ok, owner)
			}
		}
	}

	// 1. Wired, then parked by its DEL: kept for the TTL, then removed with its device.
	idP := "8d2e0000-1111-4000-8000-000000000001"
	p1 := pooledPod("p1", idP, "0a:58:0a:f6:00:01")
	tap := plug.DefaultTap(idP)
	sw.Run("ip", "-n", sw.Netns, "link", "add", tap, "type", "veth", "peer", "name", plug.NamesFor(idP).Parked)
	record := wired("sandbox-1", "p1", idP)
	if err := c.Delete(ctx, p1, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	stillPluggedFor("a deleted pod whose sandbox's DEL has not come", idP, ns+"/p1", 2*time.Second)
	pl, _ := sw.PluggedPort(idP)
	parkedAt := time.Now()
	if err := sw.DB.Park(ctx, pl, parkedAt); err != nil { // what netshift-cni's DEL does
		t.Fatal(err)
	}
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	stillPluggedFor("a parked port younger than the TTL", idP, "", ttl-time.Since(parkedAt)-500*time.Millisecond)
	waitFor(t, "the parked port removed after the TTL", func() bool { _, ok := sw.PluggedPort(idP); return !ok })
	for _, name := range []string{tap, plug.NamesFor(idP).Parked} {
		waitFor(t, "the parked port's device "+name+" removed", func() bool {
			return netdev.InNetns(sw.Netns, func() error { _, err := netlink.LinkByName(name); return err }) != nil
		})
	}

	// 2. Wired, but its DEL never comes: unplugged once the grace runs out.
	idQ := "8d2e0000-2222-4000-8000-000000000002"
	p2 := pooledPod("p2", idQ, "0a:58:0a:f6:00:02")
	wired("sandbox-2", "p2", idQ)
	deleted := time.Now()
	if err := c.Delete(ctx, p2, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	stillPluggedFor("a deleted pod within the grace", idQ, ns+"/p2", grace-time.Since(deleted)-time.Second)
	waitFor(t, "the port of a DEL that never came unplugged", func() bool { _, ok := sw.PluggedPort(idQ); return !ok })

	// 3. Not wired by netshift-cni: unplugged at once.
	idR := "8d2e0000-3333-4000-8000-000000000003"
	p3 := pooledPod("p3", idR, "0a:58:0a:f6:00:03")
	deleted = time.Now()
	if err := c.Delete(ctx, p3, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an unwired pod's port unplugged", func() bool { _, ok := sw.PluggedPort(idR); return !ok })
	if took := time.Since(deleted); took > grace {
		t.Errorf("an unwired pod's port took %s to go, past the grace for wired ones (%s)", took, grace)
	}
}
