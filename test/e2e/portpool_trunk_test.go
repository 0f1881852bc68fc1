package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// pooledPodOnATrunkNode (a step of TestTwoNodeNeutronLab): node-2 is set up
// as a VM whose NIC is a Neutron trunk's parent port. Its pooled pod gets a subport of that trunk, on a VLAN
// of its own; netshift-cni plugs the pod's end on the node's trunk bridge as
// an access port of that VLAN (asserted in OVS), and the pod reaches a
// pooled pod of node-1 over TCP through it: OVN binds the subport by its
// parent and VLAN. A deleted pod leaves nothing plugged, and its subport
// goes back to the trunk's pool, still on the trunk.
func pooledPodOnATrunkNode(t *testing.T, name string) {
	w := newPooledWorld(t, name)
	ctx := context.Background()
	parent := w.s.Neutron.TrunkParents["node-2"]
	if parent == "" {
		t.Fatalf("the lab recorded no trunk parent for node-2: %+v", w.s.Neutron)
	}
	for _, p := range []*corev1.Pod{pooledPod("host-pod", lab.PoolNamespace, "node-1"), pooledPod("vm-pod", lab.PoolNamespace, "node-2")} {
		if err := w.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	hostPod := waitRunning(t, w.c, lab.PoolNamespace, "host-pod")
	_, hostSpec := w.checkWired(hostPod)
	vmPod := waitRunning(t, w.c, lab.PoolNamespace, "vm-pod")
	a, err := portpool.ParseAssignment(vmPod.Annotations[plug.PoolAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	if a.SegmentationID < 1 || a.SegmentationID > 4094 {
		t.Fatalf("vm-pod's port %s: segmentationID %d, want a subport's VLAN", a.ID, a.SegmentationID)
	}
	// Neutron: the port is a subport of node-2's trunk, on that VLAN.
	trunk, err := w.nc.TrunkOfParent(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	onTrunk := false
	for _, s := range trunk.Subports {
		onTrunk = onTrunk || s.PortID == a.ID && s.SegmentationID == a.SegmentationID
	}
	if !onTrunk {
		t.Fatalf("port %s (VLAN %d) is not a subport of trunk %s: %+v", a.ID, a.SegmentationID, trunk.ID, trunk.Subports)
	}
	// OVS: the pod's end is an access port of the subport's VLAN on the trunk bridge.
	var sub *plug.Plugged
	for _, pl := range w.plugged("node-2") {
		if pl.PortID == a.ID {
			sub = &pl
		}
	}
	if sub == nil || sub.Mode != plug.Subport || sub.Bridge != lab.TrunkBridge || sub.VLAN != a.SegmentationID || sub.Owner != lab.PoolNamespace+"/vm-pod" {
		t.Fatalf("node-2's plug of port %s: %+v, want a subport on %s with VLAN %d", a.ID, sub, lab.TrunkBridge, a.SegmentationID)
	}
	t.Logf("vm-pod: subport %s on VLAN %d of trunk %s, its end %s on %s", a.ID, a.SegmentationID, trunk.ID, sub.Tap, sub.Bridge)
	netns := w.s.RuntimeNetns(ctx, lab.PoolNamespace, "vm-pod")
	if err := eth0Carries(netns, a); err != nil {
		t.Fatalf("vm-pod, on its subport: %v", err)
	}
	vmSpec := lab.PodSpec{Name: lab.PoolNamespace + "/vm-pod", Node: "node-2", Netns: netns, IP: vmPod.Status.PodIP}
	for _, pair := range [][2]lab.PodSpec{{vmSpec, hostSpec}, {hostSpec, vmSpec}} {
		if err := lab.TCPCheck(pair[0], pair[1], 5*time.Second); err != nil {
			t.Errorf("%s -> %s over TCP (through the subport's VLAN): %v", pair[0].Name, pair[1].Name, err)
		}
	}

	// The pod goes: its access port goes, the subport returns to its pool, still on the trunk.
	gone := &corev1.Pod{}
	gone.Namespace, gone.Name = lab.PoolNamespace, "vm-pod"
	if err := w.c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "vm-pod gone", func() bool {
		return apierrors.IsNotFound(w.c.Get(ctx, client.ObjectKeyFromObject(gone), &corev1.Pod{}))
	})
	waitFor(t, "vm-pod's subport reset and free, still on the trunk", func() bool {
		port, err := w.nc.GetPort(ctx, a.ID)
		if err != nil || port.Name != portpool.AvailableName || port.DeviceID != "" {
			return false
		}
		tr, err := w.nc.TrunkOfParent(ctx, parent)
		if err != nil {
			return false
		}
		for _, s := range tr.Subports {
			if s.PortID == a.ID {
				return true
			}
		}
		return false
	})
	w.noLeak()
	for _, pl := range w.plugged("node-2") {
		if pl.Mode == plug.Subport {
			t.Errorf("node-2: subport %s still plugged for %s", pl.PortID, pl.Owner)
		}
	}
}
