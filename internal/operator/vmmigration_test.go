package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
)

// A VM's migration as the operator sees it: a target pod with the same port
// appears on another node, then the source pod goes. The real northbound
// database's logical switch port follows; the source is dropped from it only
// once the real southbound database shows it let go of the port (its
// ovn-controller's release, played here by the test).
func TestPortChassisFollowsAMigration(t *testing.T) {
	testenv.Require(t, envMissing)
	nb := ovstest.StartNorthbound(t)
	sb := ovstest.StartSouthbound(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	id := "5e6f7a8b-0000-4000-8000-0000000000c1"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "migr-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	nb.Nbctl("ls-add", "ls-vm", "--", "lsp-add", "ls-vm", id, "--", "lsp-set-options", id, "foo=bar",
		"--", "set", "logical_switch_port", id, "external_ids:"+plug.NamespaceKey+"="+ns.Name)
	// The port bound on node-1, as its ovn-controller would have it.
	chassis := map[string]string{}
	for i, n := range []string{"node-1", "node-2"} {
		sb.Sbctl("chassis-add", n, "geneve", fmt.Sprintf("192.0.2.%d", i+1))
		chassis[n] = sb.Sbctl("--bare", "--columns=_uuid", "find", "Chassis", "name="+n)
	}
	dp := sb.Sbctl("create", "Datapath_Binding", "tunnel_key=1")
	binding := sb.Sbctl("create", "Port_Binding", "logical_port="+id, "tunnel_key=1", "datapath="+dp, "chassis="+chassis["node-1"])
	mgr, err := operator.NewManager(ctx, env.OperatorConfig(), operator.Options{MetricsAddr: "0", HealthAddr: "0", TimeAddr: "0",
		ManyInProcess: true, OVNNorthbound: nb.DB, OVNSouthbound: sb.DB, Registry: prometheus.NewRegistry(), SouthboundResync: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	spec := fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0a"}`, id)
	podIn := func(namespace, name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: map[string]string{plug.PortSpecAnnotation: spec}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "vm", Image: "vm"}}}}
	}
	pod := func(name, node string) *corev1.Pod { return podIn(ns.Name, name, node) }
	expect := func(what string, want map[string]string) {
		t.Helper()
		var got map[string]string
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			opts, _, err := nb.PortOptions(ctx, id)
			got = opts
			if err != nil || len(opts) != len(want) {
				return false, err
			}
			for k, v := range want {
				if opts[k] != v {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: options %v, want %v (%v)", what, got, want, err)
		}
	}
	src := pod("vm-1", "node-1")
	if err := c.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	expect("one pod", map[string]string{"foo": "bar", "requested-chassis": "node-1"})
	// Another tenant's pod naming the same port is never bound: the port stays where it is.
	thief := podIn(other.Name, "thief", "node-3")
	if err := c.Create(ctx, thief); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(other.Name)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "thief" && e.Reason == "PortRefused" && strings.Contains(e.Note, "recorded for namespace") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no PortRefused event on another tenant's pod naming the port: %v", err)
	}
	expect("another tenant's pod refused", map[string]string{"foo": "bar", "requested-chassis": "node-1"})
	if err := c.Delete(ctx, thief, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	target := pod("vm-1-target", "node-2")
	target.Annotations[plug.MigrationTargetAnnotation] = "vm-1" // created in the same second: the mark orders them
	if err := c.Create(ctx, target); err != nil {
		t.Fatal(err)
	}
	expect("migrating", map[string]string{"foo": "bar", "requested-chassis": "node-1,node-2", "activation-strategy": "rarp"})
	sb.Sbctl("set", "Port_Binding", binding, "additional_chassis="+chassis["node-2"])
	if err := c.Delete(ctx, src, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	// node-1 still holds the port: dropping it now would let its late release
	// empty the binding under node-2.
	holds := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(holds) {
		if opts, _, err := nb.PortOptions(ctx, id); err != nil || opts["requested-chassis"] != "node-1,node-2" {
			t.Fatalf("requested-chassis %q while the source still held the port (%v)", opts["requested-chassis"], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sb.Sbctl("clear", "Port_Binding", binding, "chassis") // node-1's release
	released := time.Now()
	expect("migrated", map[string]string{"foo": "bar", "requested-chassis": "node-2"})
	t.Logf("the port was handed to node-2 alone %d ms after node-1 let go of it", time.Since(released).Milliseconds())
}
