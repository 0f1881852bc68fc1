package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/ovs/ovstest"
)

// With no --underlay-interface, the agent finds the node's interface onto
// the underlay by its tunnel address (OVN's ovn-encap-ip, else the Node's
// InternalIP) and refuses an MTU that does not fit it, naming the interface,
// its MTU and the MTU the NetshiftNetwork says the underlay has; one it
// cannot find is a warning, not a stop.
func TestTheUnderlayIsFoundByTheTunnelAddress(t *testing.T) {
	sw := ovstest.Start(t)
	sw.Run("ip", "-n", sw.Netns, "link", "add", "uplink0", "mtu", "1500", "type", "veth", "peer", "name", "uplink0p")
	sw.Run("ip", "-n", sw.Netns, "addr", "add", "192.0.2.10/24", "dev", "uplink0")
	sw.Run("ip", "-n", sw.Netns, "link", "add", "other0", "mtu", "9000", "type", "veth", "peer", "name", "other0p")
	sw.Run("ip", "-n", sw.Netns, "addr", "add", "198.51.100.7/24", "dev", "other0")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-3"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "worker-3"}, {Type: corev1.NodeInternalIP, Address: "198.51.100.7"}}}}
	a := &Agent{Node: "worker-3", NodeNetns: sw.Netns, Switch: sw.DB, Client: fake.NewClientBuilder().WithObjects(node).Build()}
	ctx := context.Background()
	plan := func(mtu int32) *v1alpha1.LiveChangePlan {
		return &v1alpha1.LiveChangePlan{ID: "mtu-1", Kind: v1alpha1.ChangeMTU, To: mtu, Encapsulation: v1alpha1.EncapGeneve, UnderlayMTU: 9000}
	}

	// No ovn-encap-ip: the Node's InternalIP, on other0 (MTU 9000).
	fits := func(mtu int32) string {
		problem, unchecked := a.underlayFits(ctx, plan(mtu))
		return problem + unchecked
	}
	if p := fits(8900); p != "" {
		t.Errorf("8900 + 58 under other0's 9000: %s", p)
	}
	if p := fits(8990); !strings.Contains(p, "other0 has MTU 9000") {
		t.Errorf("8990 + 58 over other0's 9000: %q, want other0 named", p)
	}
	// OVN's encap address wins: uplink0 (MTU 1500), smaller than the declared 9000.
	sw.Vsctl("set", "open_vswitch", ".", "external_ids:ovn-encap-ip=192.0.2.10")
	if p := fits(1442); p != "" {
		t.Errorf("1442 + 58 under uplink0's 1500: %s", p)
	}
	// The agent reads the switch through its own copy of the database, which
	// the update reaches a moment later.
	p := fits(1450)
	for deadline := time.Now().Add(5 * time.Second); p == "" && time.Now().Before(deadline); p = fits(1450) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{"uplink0 has MTU 1500", "1450 + 58", "spec.underlay.mtu says 9000"} {
		if !strings.Contains(p, want) {
			t.Errorf("1450 + 58 over uplink0's 1500: %q, want %q in it", p, want)
		}
	}
	// An address no interface holds: not checked, a warning naming it and what to do.
	sw.Vsctl("set", "open_vswitch", ".", "external_ids:ovn-encap-ip=203.0.113.9")
	problem, unchecked := a.underlayFits(ctx, plan(1400))
	for deadline := time.Now().Add(5 * time.Second); unchecked == "" && time.Now().Before(deadline); problem, unchecked = a.underlayFits(ctx, plan(1400)) {
		time.Sleep(10 * time.Millisecond)
	}
	if problem != "" ||
		!strings.Contains(unchecked, "no interface of the node holds its ovn-encap-ip 203.0.113.9") || !strings.Contains(unchecked, "--underlay-interface") {
		t.Errorf("unheld address: problem %q, warning %q", problem, unchecked)
	}
	// Given, the interface is the one given.
	a.UnderlayInterface = "other0"
	if p := fits(1450); p != "" {
		t.Errorf("given other0 (9000): %s", p)
	}
}
