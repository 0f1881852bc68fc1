package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
)

// TestTenantsCannotSteerPlugging plays the tenant attacks on a real switch and
// a real API server: a pod of a namespace not opted in, or naming another
// namespace's port (its ID, or one with its bridge's prefix), or another
// port's tap before it exists, or a 120 KB ID, or more ports than its
// namespace's limit, plugs nothing; the victim's ports are plugged as theirs,
// and the node's plug mode is the admin's to change.
func TestTenantsCannotSteerPlugging(t *testing.T) {
	testenv.Require(t, envMissing)
	sw := ovstest.Start(t)
	ctx := context.Background()
	c := env.Client
	node := "tenant-1"
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*corev1.Namespace{
		vmNamespace("victim", "victimport*", ""),
		vmNamespace("squatter", "squat-*", "2"),
		{ObjectMeta: metav1.ObjectMeta{Name: "outsider"}},
	} {
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	stop := startAgent(t, node, sw)
	defer stop()
	pod := func(ns, name, spec string) *corev1.Pod {
		t.Helper()
		p := vmPod(name, node, spec)
		p.Namespace = ns
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := func(id string) string { return fmt.Sprintf(`{"id":%q,"mac":"0a:58:c6:12:fa:0a"}`, id) }
	switchWas := sw.Vsctl("show")
	unchanged := func(what string) {
		t.Helper()
		if now := sw.Vsctl("show"); now != switchWas {
			t.Errorf("%s changed the switch:\n%s\nwas\n%s", what, now, switchWas)
		}
	}

	// A namespace not opted in: nothing is plugged, so nothing of its holds
	// the node's plug mode; the admin's switch to direct takes effect.
	pod("outsider", "lock", spec("lock-1"))
	cond := waitCondition(t, c, "outsider/lock", reasonRefused)
	if !strings.Contains(cond.Message, "namespace outsider is not opted in") {
		t.Errorf("a namespace not opted in: %+v", cond)
	}
	unchanged("a pod of a namespace not opted in")
	setMode := func(mode string) {
		t.Helper()
		body := `{"metadata":{"annotations":{"` + plug.ModeAnnotation + `":null}}}`
		if mode != "" {
			body = `{"metadata":{"annotations":{"` + plug.ModeAnnotation + `":"` + mode + `"}}}`
		}
		if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	setMode("direct")
	v0 := pod("victim", "v0", spec("victimport0-direct"))
	waitCondition(t, c, "victim/v0", reasonWaitingForDevice)
	if err := c.Delete(ctx, v0, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v0's direct port to go", func() bool { return !strings.Contains(sw.Vsctl("show"), "victimport0") })
	setMode("")

	// Another namespace's port, by its ID and by its bridge's prefix, and
	// another port's tap named before its device exists.
	victimID, nextVictimID := "victimport1-0001", "victimport2-0002"
	for name, c2 := range map[string]struct{ spec, reason, says string }{
		"by-id":     {spec(victimID), reasonRefused, "not a port of namespace squatter"},
		"by-prefix": {spec("victimport1-squat"), reasonRefused, "not a port of namespace squatter"},
		"by-tap": {fmt.Sprintf(`{"id":"squat-1","mac":"0a:58:c6:12:fa:0b","tap":%q}`, plug.DefaultTap(nextVictimID)),
			reasonInvalid, "a tap's name derives from the port ID alone"},
		"huge-id": {spec(strings.Repeat("x", 120<<10)), reasonInvalid, "must be 1 to 64 letters"},
	} {
		pod("squatter", name, c2.spec)
		cond := waitCondition(t, c, "squatter/"+name, c2.reason)
		if !strings.Contains(cond.Message, c2.says) || len(cond.Message) > 1100 {
			t.Errorf("squatter's %s: message of %d bytes %.300q, want one saying %q", name, len(cond.Message), cond.Message, c2.says)
		}
	}
	unchanged("the squatter's pods")

	// The victim's pods get their ports, and the tap its hypervisor creates
	// later lands on its own port's bridge.
	pod("victim", "v1", spec(victimID))
	pod("victim", "v2", spec(nextVictimID))
	waitCondition(t, c, "victim/v1", reasonReady)
	waitCondition(t, c, "victim/v2", reasonReady)
	tap := plug.DefaultTap(nextVictimID)
	sw.Run("ip", "-n", sw.Netns, "link", "add", tap, "type", "veth", "peer", "name", "v2-eth0")
	waitFor(t, "the victim's tap on its port's bridge", func() bool {
		return sw.Vsctl("port-to-br", tap) == plug.NamesFor(nextVictimID).Bridge
	})

	// The squatter's own ports, up to its namespace's limit of 2 on the node.
	for _, name := range []string{"squat-a", "squat-b", "squat-c"} {
		pod("squatter", name, spec(name))
	}
	waitCondition(t, c, "squatter/squat-a", reasonReady)
	waitCondition(t, c, "squatter/squat-b", reasonReady)
	cond = waitCondition(t, c, "squatter/squat-c", reasonRefused)
	if !strings.Contains(cond.Message, "namespace squatter has 2 ports plugged on this node, its limit") {
		t.Errorf("the third port: %+v", cond)
	}
	if n := strings.Count(sw.Vsctl("list-br"), "pbr-squat"); n != 2 {
		t.Errorf("the squatter has %d bridges, want 2:\n%s", n, sw.Vsctl("list-br"))
	}
	// One of its ports goes: the refused one is plugged in its place.
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "squatter", Name: "squat-a"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitConditionWithin(t, c, "squatter/squat-c", reasonReady, 30*time.Second)
	setNS := func(name, body string) {
		t.Helper()
		if err := c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	// A limit lowered under ports in use bounds new plugs and keeps those.
	setNS("squatter", `{"metadata":{"annotations":{"`+plug.MaxPortsAnnotation+`":"1"}}}`)
	pod("squatter", "squat-e", spec("squat-e"))
	waitConditionMessage(t, c, "squatter/squat-e", reasonRefused, "its limit")
	waitCondition(t, c, "squatter/squat-b", reasonReady)
	if n := strings.Count(sw.Vsctl("list-br"), "pbr-squat"); n != 2 {
		t.Errorf("a lowered limit left the squatter %d bridges, want its 2 in use", n)
	}

	// An admin's typo in the namespace's settings stops new plugs and keeps the
	// ports in use.
	setNS("squatter", `{"metadata":{"annotations":{"`+plug.MaxPortsAnnotation+`":"0"}}}`)
	pod("squatter", "squat-d", spec("squat-d"))
	cond = waitCondition(t, c, "squatter/squat-d", reasonRefused)
	if !strings.Contains(cond.Message, `annotation netshift.io/max-ports-per-node: "0" is not a whole number from 1 to 256`) {
		t.Errorf("a pod under an invalid namespace setting: %+v", cond)
	}
	time.Sleep(time.Second)
	if n := strings.Count(sw.Vsctl("list-br"), "pbr-squat"); n != 2 {
		t.Errorf("an invalid namespace setting left the squatter %d bridges, want its 2 in use", n)
	}

	// Another namespace given ports whose names can be the victim's (victim-*
	// and victimport* both make tapvictim...): new ports of either are refused
	// until the admin sorts it out; the victim's ports in use stay.
	if err := c.Create(ctx, vmNamespace("overlap", "victim-*", "")); err != nil {
		t.Fatal(err)
	}
	pod("overlap", "o1", spec("victim-port3"))
	cond = waitCondition(t, c, "overlap/o1", reasonRefused)
	if !strings.Contains(cond.Message, "could be those of namespace victim's ports too") {
		t.Errorf("a port whose names another namespace's ports may have: %+v", cond)
	}
	pod("victim", "v3", spec("victimport3-0003"))
	waitConditionMessage(t, c, "victim/v3", reasonRefused, "namespace overlap's ports too")
	waitCondition(t, c, "victim/v1", reasonReady)
	setNS("overlap", `{"metadata":{"labels":{"`+plug.PortSpecOptInLabel+`":null}}}`)
	waitConditionWithin(t, c, "victim/v3", reasonReady, 30*time.Second)

	// The admin takes the namespace out: its ports go.
	if err := c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "squatter"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+plug.PortSpecOptInLabel+`":null}}}`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the squatter's bridges to go", func() bool { return !strings.Contains(sw.Vsctl("list-br"), "pbr-squat") })
}
