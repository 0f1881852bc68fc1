package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
)

// TestAcquireFromAWarmPool: the first request for a new key creates its pool
// and answers "not ready"; the refill is one bulk request; the pod then gets a
// port, recorded on the pod first, and (synchronous mode) the port's Neutron
// name and device are the pod's.
func TestAcquireFromAWarmPool(t *testing.T) {
	f := newFixture(t)
	m, _ := f.start(testSettings(), false)
	p := f.pod("web-1")
	if _, err := m.Acquire(f.ctx, p, f.key); !errors.Is(err, ErrNotReady) {
		t.Fatalf("first request of a new pool: %v, want ErrNotReady", err)
	}
	f.eventually("the first batch", func() bool { d, _ := m.Show(f.key); return d.Ready >= 3 })
	calls := f.nc.Calls().Snapshot()
	if calls["create ports"] != 1 {
		t.Fatalf("Neutron requests %v: want ONE bulk create for the batch", calls)
	}
	a := f.acquire(m, p)
	var cur corev1.Pod
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := AssignmentOf(&cur)
	if err != nil || !ok || rec.ID != a.ID || rec.MAC == "" || len(rec.IPs) != 1 || rec.Pool != f.key.String() {
		t.Fatalf("ownership record %+v (%v, %v), assignment %+v", rec, ok, err, a)
	}
	// The pod's interface is made from the record: its address with the subnet's prefix and gateway.
	if want := rec.IPs[0] + "/16"; len(rec.Addresses) != 1 || rec.Addresses[0].CIDR != want || !strings.HasSuffix(rec.Addresses[0].Gateway, ".0.1") {
		t.Fatalf("ownership record's addresses %+v: want [%s, gateway the subnet's first address]", rec.Addresses, want)
	}
	port, err := f.nc.GetPort(f.ctx, a.ID)
	if err != nil || port.Name != f.ns+"/web-1" || port.DeviceID != string(p.UID) || port.HostID != "worker-1" ||
		len(port.SecurityGroups) != 1 || port.SecurityGroups[0] != f.sg || port.DeviceOwner != DeviceOwner {
		t.Fatalf("Neutron port %+v, %v", port, err)
	}
	again, err := m.Acquire(f.ctx, p, f.key)
	if err != nil || again.ID != a.ID {
		t.Fatalf("a second request of the same pod: %+v, %v; want its port again", again, err)
	}
	f.noLeak(m)
}

// TestReleaseRecyclesThePort: a released port is reset in Neutron and goes
// back to its pool; at the pool's maximum it is deleted instead.
func TestReleaseRecyclesThePort(t *testing.T) {
	f := newFixture(t)
	s := testSettings()
	s.MinReady, s.Batch, s.MaxSize = 1, 2, 2
	m, _ := f.start(s, false)
	a := f.acquire(m, f.pod("a"))
	if _, ok := m.Release(f.ns + "/a"); !ok {
		t.Fatal("release of a port in use failed")
	}
	f.backInPool(m, a.ID)
	port, _ := f.nc.GetPort(f.ctx, a.ID)
	if port.Name != portpool.AvailableName || port.DeviceID != "" {
		t.Fatalf("recycled port %+v: want it reset", port)
	}
	// Fill the pool to its maximum with two pods, then release one while a third port exists.
	f.acquire(m, f.pod("b"))
	f.acquire(m, f.pod("c"))
	if d, _ := m.Show(f.key); d.Ready+d.InUse+d.Recycling+d.Creating > 2 {
		t.Fatalf("pool over its maximum of 2: %+v", d.PoolStatus)
	}
	m.Release(f.ns + "/b")
	f.eventually("b's port back", func() bool { d, _ := m.Show(f.key); return d.Ready == 1 })
	f.noLeak(m)
}

// TestDeferredBookkeeping: handing out a port makes no Neutron call; the
// bookkeeping follows in the background, and a port released and handed out
// again before its updates went costs one update, the last owner's.
func TestDeferredBookkeeping(t *testing.T) {
	f := newFixture(t)
	f.flush = 2 * time.Second // acquire, release and acquire again all fall in one window
	m, _ := f.start(testSettings(), true)
	p := f.pod("fast-1")
	f.acquire(m, f.pod("warm")) // the pool exists and is warm
	m.Release(f.ns + "/warm")
	f.eventually("bookkeeping sent", func() bool { return m.List().Pending == 0 })
	before := f.nc.Calls().Total()
	a, err := m.Acquire(f.ctx, p, f.key)
	if err != nil {
		t.Fatal(err)
	}
	if after := f.nc.Calls().Total(); after != before {
		t.Fatalf("a deferred acquire made %d Neutron requests", after-before)
	}
	m.Release(f.ns + "/fast-1")
	q := f.pod("fast-2")
	b, err := m.Acquire(f.ctx, q, f.key)
	if err != nil || b.ID != a.ID {
		t.Fatalf("the released port is handed out next (newest first): %+v, %v", b, err)
	}
	updatesBefore := f.nc.Calls().Snapshot()["update ports"]
	f.eventually("bookkeeping sent", func() bool { return m.List().Pending == 0 })
	if n := f.nc.Calls().Snapshot()["update ports"] - updatesBefore; n != 1 {
		t.Fatalf("%d port updates for acquire, release, acquire of one port: want 1 (coalesced)", n)
	}
	port, _ := f.nc.GetPort(f.ctx, a.ID)
	if port.Name != f.ns+"/fast-2" || port.DeviceID != string(q.UID) {
		t.Fatalf("Neutron port %+v: want the last owner's bookkeeping", port)
	}
	f.noLeak(m)
}

// TestIdleExpiry: ready ports idle past the timeout are deleted down to the minimum.
func TestIdleExpiry(t *testing.T) {
	f := newFixture(t)
	s := testSettings()
	s.MinReady, s.Batch, s.IdleTimeout = 2, 4, 300*time.Millisecond
	m, _ := f.start(s, false)
	if n, err := m.Populate(f.ctx, f.key, 8); err != nil || n != 8 {
		t.Fatalf("populate: %d, %v", n, err)
	}
	f.eventually("idle ports to expire", func() bool { d, _ := m.Show(f.key); return d.Ready == 2 })
	f.eventually("Neutron to hold 2", func() bool { return len(f.tagged()) == 2 })
	f.noLeak(m)
}

// TestRecovery: a manager stops with a pool, a port in use and a port whose
// pod is deleted while it is down; an untagged-looking orphan (a port of no
// pool) is there too. The next manager answers "not ready" until it has
// recovered, then keeps the live pod's port, recycles the dead pod's, and
// deletes only the orphan.
func TestRecovery(t *testing.T) {
	f := newFixture(t)
	m1, stop := f.start(testSettings(), false)
	live, dead := f.pod("live"), f.pod("dead")
	la, da := f.acquire(m1, live), f.acquire(m1, dead)
	f.eventually("the pool refilled", func() bool { d, _ := m1.Show(f.key); return d.Ready >= 3 })
	stop()
	f.remove(dead)
	orphan, err := f.nc.CreatePort(f.ctx, neutron.NewPort{NetworkID: f.key.Network, ProjectID: f.key.Project, Name: portpool.AvailableName,
		SecurityGroups: []string{}, Tags: []string{"netshift-cluster=" + f.cluster}}) // no host, no trunk: no pool
	if err != nil {
		t.Fatal(err)
	}
	before := f.tagged()
	m2, err := New(f.nc, operatorClient(t), Options{Settings: testSettings(), ClusterID: f.cluster, Backoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Acquire(f.ctx, f.pod("early"), f.key); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "recovering") {
		t.Fatalf("acquire before recovery: %v", err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	go func() { _ = m2.Start(ctx) }()
	f.eventually("recovery", m2.Ready)
	f.eventually("the orphan deleted", func() bool { _, ok := f.tagged()[orphan.ID]; return !ok })
	d, _ := m2.Show(f.key)
	if len(d.InUsePorts) != 1 || d.InUsePorts[0].ID != la.ID || d.InUsePorts[0].Owner != f.ns+"/live" {
		t.Fatalf("in use after recovery: %+v, want only live's %s", d.InUsePorts, la.ID)
	}
	// A recovered pool hands out ports a pod's interface can be made from, as a new one does.
	for _, q := range d.ReadyPorts {
		if len(q.Addresses) != 1 || q.Addresses[0].CIDR != q.IPs[0]+"/16" {
			t.Fatalf("recovered ready port %+v: want its address with the subnet's prefix", q)
		}
	}
	f.eventually("the dead pod's port reset and back", func() bool {
		p, err := f.nc.GetPort(f.ctx, da.ID)
		d, _ := m2.Show(f.key)
		for _, q := range d.ReadyPorts {
			if q.ID == da.ID {
				return err == nil && p.Name == portpool.AvailableName && p.DeviceID == ""
			}
		}
		return false
	})
	if got := len(f.tagged()); got != len(before)-1 {
		t.Fatalf("%d tagged ports after recovery, %d before: only the orphan may go", got, len(before))
	}
	f.noLeak(m2)
}

// TestPortsCreatedAfterTheRecoveryAreAdopted: a bulk create that a killed
// predecessor sent lands in Neutron after the new manager's recovery listed
// the ports; a late sweep adopts those ports into their pool, and never the
// manager's own creates in flight, which its pool gets once (no port twice).
func TestPortsCreatedAfterTheRecoveryAreAdopted(t *testing.T) {
	f := newFixture(t)
	s := testSettings()
	// A sweep long after the others: on a loaded machine the test's own batch can take Neutron
	// longer than the first two, and ports made after the last sweep are found by none.
	m, err := New(f.nc, operatorClient(t), Options{Settings: s, ClusterID: f.cluster, Backoff: 50 * time.Millisecond,
		LateSweeps: []time.Duration{time.Second, 2 * time.Second, 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { _ = m.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	f.eventually("recovery", m.Ready)
	// The predecessor's batch, answered to nobody: its ports carry the cluster's tag and a batch tag.
	late := make([]neutron.NewPort, 2)
	for i := range late {
		late[i] = neutron.NewPort{NetworkID: f.key.Network, ProjectID: f.key.Project, Name: portpool.AvailableName, DeviceOwner: DeviceOwner,
			SecurityGroups: f.key.Groups(), HostID: f.key.Host, Tags: []string{"netshift-cluster=" + f.cluster, "netshift-batch=killed"}}
	}
	made, err := f.nc.CreatePorts(f.ctx, late)
	if err != nil {
		t.Fatal(err)
	}
	f.eventually("the late ports adopted", func() bool {
		held := accounted(m)
		return held[made[0].ID] == "ready" && held[made[1].ID] == "ready"
	})
	time.Sleep(1500 * time.Millisecond) // the second sweep, while the pool refills: nothing is adopted twice
	f.noLeak(m)
	m.mu.Lock()
	var ready []string
	for _, p := range m.pools {
		for _, q := range p.Ready {
			ready = append(ready, q.ID)
		}
	}
	m.mu.Unlock()
	slices.Sort(ready)
	if len(slices.Compact(slices.Clone(ready))) != len(ready) {
		t.Fatalf("a port is in its pool twice: %v", ready)
	}
}

// TestTrunkPool: pods in VMs get subports of their VM's trunk, on free VLANs;
// expiry takes them off the trunk before deleting them.
func TestTrunkPool(t *testing.T) {
	f := newFixture(t)
	parent, err := f.nc.CreatePort(f.ctx, neutron.NewPort{NetworkID: f.key.Network, ProjectID: f.key.Project, Name: "vm-1", SecurityGroups: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	trunk, err := f.nc.CreateTrunk(f.ctx, f.key.Project, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := portpool.NewKey(f.key.Project, f.key.Network, "", parent.ID, []string{f.sg})
	s := testSettings()
	s.MinReady, s.Batch, s.IdleTimeout = 1, 3, 300*time.Millisecond
	m, _ := f.start(s, false)
	if n, err := m.Populate(f.ctx, key, 3); err != nil || n != 3 {
		t.Fatalf("populate: %d, %v", n, err)
	}
	got, err := f.nc.TrunkOfParent(f.ctx, parent.ID)
	if err != nil || len(got.Subports) != 3 || got.ID != trunk.ID {
		t.Fatalf("trunk %+v, %v: want 3 subports", got, err)
	}
	vlans := map[int]bool{}
	for _, sp := range got.Subports {
		vlans[sp.SegmentationID] = true
	}
	if len(vlans) != 3 {
		t.Fatalf("segmentation IDs %v: want 3 distinct", got.Subports)
	}
	p := f.pod("nested")
	var a Assignment
	f.eventually("a subport", func() bool { a, err = m.Acquire(f.ctx, p, key); return err == nil })
	if a.SegmentationID == 0 || !vlans[a.SegmentationID] {
		t.Fatalf("assignment %+v: want one of the trunk's VLANs", a)
	}
	f.eventually("idle subports to expire", func() bool {
		tr, _ := f.nc.TrunkOfParent(f.ctx, parent.ID)
		return len(tr.Subports) == 2 // one in use, one ready (the minimum)
	})
	f.noLeak(m)
}

// TestPodController: a scheduled pod of an opted-in namespace gets a port on
// its annotation; its deletion releases it; a pod of another namespace is left alone.
func TestPodController(t *testing.T) {
	f := newFixture(t)
	m, _ := f.start(testSettings(), false)
	pc := &PodController{Client: operatorClient(t), Manager: m}
	p := f.pod("ctl-1")
	req := reconcileRequest(p)
	f.eventually("the pod's port", func() bool {
		res, err := pc.Reconcile(f.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var cur corev1.Pod
		_ = env.Client.Get(f.ctx, client.ObjectKeyFromObject(p), &cur)
		_, ok, _ := AssignmentOf(&cur)
		return ok && res.RequeueAfter == 0
	})
	f.remove(p)
	if _, err := pc.Reconcile(f.ctx, req); err != nil {
		t.Fatal(err)
	}
	if d, _ := m.Show(f.key); d.InUse != 0 {
		t.Fatalf("after the pod's deletion: %+v", d.PoolStatus)
	}
	other := newFixture(t)
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: other.ns}, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	plain := &corev1.Namespace{}
	_ = env.Client.Get(f.ctx, client.ObjectKey{Name: other.ns}, plain)
	patch := client.MergeFrom(plain.DeepCopy())
	delete(plain.Labels, OptInLabel)
	if err := env.Client.Patch(f.ctx, plain, patch); err != nil {
		t.Fatal(err)
	}
	q := other.pod("ignored")
	if res, err := pc.Reconcile(f.ctx, reconcileRequest(q)); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("a pod of a namespace not opted in: %+v, %v", res, err)
	}
	var cur corev1.Pod
	_ = env.Client.Get(f.ctx, client.ObjectKeyFromObject(q), &cur)
	if _, ok, _ := AssignmentOf(&cur); ok {
		t.Fatal("a pod of a namespace not opted in got a port")
	}
}
