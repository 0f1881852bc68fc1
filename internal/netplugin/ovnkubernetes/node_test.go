package ovnkubernetes

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/model/sb"
	"netshift.io/netshift/internal/ovs/ovsmem"
	"netshift.io/netshift/internal/testenv"
)

// TestRouteMTUStepSetsTheLockedRoutes: in a real network namespace, the
// step sets the routes through ovn-k8s-mp0 and breth0 that carry the old MTU,
// leaves a route with another MTU and one without any as they are, and run
// again changes nothing more.
func TestRouteMTUStepSetsTheLockedRoutes(t *testing.T) {
	testenv.RequireRoot(t)
	ns := fmt.Sprintf("ns-ovnk-test-%d", time.Now().UnixNano()%100000)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		return string(out)
	}
	run("ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	for _, cmd := range [][]string{
		// veths: this kernel has no dummy devices
		{"link", "add", ManagementPort, "mtu", "1442", "type", "veth", "peer", "name", "mp0-peer"},
		{"link", "add", GatewayBridge, "mtu", "1500", "type", "veth", "peer", "name", "gw-peer"},
		{"link", "set", "mp0-peer", "up"},
		{"link", "set", "gw-peer", "up"},
		{"link", "set", ManagementPort, "up"},
		{"link", "set", GatewayBridge, "up"},
		{"addr", "add", "10.244.0.2/24", "dev", ManagementPort},
		{"addr", "add", "192.168.0.2/24", "dev", GatewayBridge},
		{"route", "add", "10.96.0.0/16", "via", "192.168.0.4", "dev", GatewayBridge, "mtu", "1442"},
		{"route", "add", "10.245.0.0/16", "via", "10.244.0.1", "dev", ManagementPort, "mtu", "1442"},
		{"route", "add", "10.246.0.0/16", "via", "10.244.0.1", "dev", ManagementPort, "mtu", "1300"},
		{"route", "add", "10.247.0.0/16", "via", "192.168.0.4", "dev", GatewayBridge},
	} {
		run(append([]string{"ip", "-n", ns}, cmd...)...)
	}
	n := NewNode(nodenet.Env{Node: "node-1", Netns: ns, Pods: nodenet.NoPods{}})
	plan := &v1alpha1.LiveChangePlan{ID: "mtu-1", Kind: v1alpha1.ChangeMTU, From: 1442, To: 1342}
	for i, wantChanged := range []int{2, 0} {
		armed, err := n.Arm(context.Background(), plan, v1alpha1.ScheduledStep{Action: StepRouteMTU, Value: 1342})
		if err != nil {
			t.Fatal(err)
		}
		o, err := armed.Fire(context.Background())
		armed.Release()
		if err != nil || o.Changed != wantChanged {
			t.Fatalf("run %d: changed %d, %v; want %d", i+1, o.Changed, err, wantChanged)
		}
	}
	routes := run("ip", "-n", ns, "route")
	for _, want := range []string{"10.96.0.0/16 via 192.168.0.4 dev breth0 mtu 1342", "10.245.0.0/16 via 10.244.0.1 dev ovn-k8s-mp0 mtu 1342",
		"10.246.0.0/16 via 10.244.0.1 dev ovn-k8s-mp0 mtu 1300"} {
		if !strings.Contains(routes, want) {
			t.Errorf("routes lack %q:\n%s", want, routes)
		}
	}
	if strings.Contains(routes, "10.247.0.0/16 via 192.168.0.4 dev breth0 mtu") {
		t.Errorf("a route without an MTU got one:\n%s", routes)
	}
}

// TestAGenevePortChangeSetsTheZonesSouthbound: on a node whose ovn-controller
// reads a southbound database of the node's own zone, the step sets every
// Geneve Encap row there, the other chassis' among them, and a change back to
// 6081 leaves no dst_port; a node whose database netshift cannot reach
// refuses the change at its preconditions, saying why. An MTU change is never
// refused for it.
func TestAGenevePortChangeSetsTheZonesSouthbound(t *testing.T) {
	ctx := context.Background()
	full, _ := sb.FullDatabaseModel()
	zone := ovsmem.StartSouthbound(t)
	ovsmem.Insert(t, zone, full,
		&sb.Encap{UUID: "e1", ChassisName: "node-1", IP: "198.19.0.1", Type: sb.EncapTypeGeneve, Options: map[string]string{"csum": "true"}},
		&sb.Encap{UUID: "e2", ChassisName: "node-2", IP: "198.19.0.2", Type: sb.EncapTypeGeneve, Options: map[string]string{"csum": "true"}},
		&sb.Chassis{UUID: "c1", Name: "node-1", Encaps: []string{"e1"}},
		&sb.Chassis{UUID: "c2", Name: "node-2", Encaps: []string{"e2"}})
	socket := strings.TrimPrefix(zone, "unix:")
	node := func(ids map[string]string) *Node {
		t.Helper()
		sw, err := ovs.OpenSwitch(ctx, ovsmem.StartSwitchWith(t, ids))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sw.Close)
		return NewNode(nodenet.Env{Node: "node-1", Pods: nodenet.NoPods{}, Switch: sw, OVNRunDir: filepath.Dir(socket)})
	}
	own := map[string]string{"ovn-remote": "unix:/var/run/ovn/" + filepath.Base(socket)}
	plan := func(from, to int32) *v1alpha1.LiveChangePlan {
		return &v1alpha1.LiveChangePlan{ID: fmt.Sprintf("geneveport-%d", to), Kind: v1alpha1.ChangeGenevePort, From: from, To: to, Encapsulation: v1alpha1.EncapGeneve,
			Steps: []v1alpha1.ScheduledStep{{Action: StepEncapPort, Value: to}}}
	}
	refusals := []struct {
		name string
		ids  map[string]string
		want string
	}{
		{"no ovn-remote", nil, "external_ids:ovn-remote is empty"},
		{"an SSL southbound", map[string]string{"ovn-remote": "ssl:198.19.0.1:6642"}, "an ssl: one needs ovn-controller's certificate"},
		{"a clustered southbound", map[string]string{"ovn-remote": "tcp:198.19.0.1:6642,tcp:198.19.0.2:6642"}, "several southbound servers"},
		{"a socket elsewhere", map[string]string{"ovn-remote": "unix:/tmp/sb.sock"}, "only in its OVN run directory"},
		{"a zone database not there", map[string]string{"ovn-remote": "unix:/var/run/ovn/none.sock"}, "none.sock"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			f := node(c.ids).Check(ctx, plan(6081, 6090))
			if len(f.Problems) != 1 || !strings.Contains(f.Problems[0], "the Geneve port cannot change here") || !strings.Contains(f.Problems[0], c.want) {
				t.Fatalf("problems %q, want one saying %q", f.Problems, c.want)
			}
		})
	}
	n := node(own)
	read := func() map[string]int {
		s := ovs.NewSouthbound(zone)
		defer s.Close()
		rows, err := s.GeneveEncaps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range rows {
			got[r.Chassis] = r.DstPort
		}
		return got
	}
	for _, c := range []struct {
		from, to int32
		want     int // options:dst_port, 0 when absent
	}{{6081, 6090, 6090}, {6090, 6090, 6090}, {6090, 6081, 0}} {
		p := plan(c.from, c.to)
		if f := n.Check(ctx, p); len(f.Problems) > 0 || len(f.WouldChange) == 0 {
			t.Fatalf("%d -> %d: findings %+v", c.from, c.to, f)
		}
		armed, err := n.Arm(ctx, p, v1alpha1.ScheduledStep{Action: StepEncapPort, Value: c.to})
		if err != nil {
			t.Fatal(err)
		}
		o, err := armed.Fire(ctx)
		armed.Release()
		if err != nil {
			t.Fatalf("%d -> %d: %v", c.from, c.to, err)
		}
		changed := 2
		if c.from == c.to {
			changed = 0 // a step run again changes nothing
		}
		if got := read(); o.Changed != changed || got["node-1"] != c.want || got["node-2"] != c.want {
			t.Fatalf("%d -> %d: changed %d (want %d), dst_port by chassis %v, want %d on both", c.from, c.to, o.Changed, changed, got, c.want)
		}
	}
	// The preconditions come before the steps are scheduled: a plan without them is checked the same.
	unscheduled := plan(6081, 6090)
	unscheduled.Steps = nil
	if f := n.Check(ctx, unscheduled); len(f.Problems) > 0 || len(f.WouldChange) == 0 {
		t.Errorf("a plan whose steps are not scheduled yet: findings %+v", f)
	}
	oldOperator := plan(6081, 6090)
	oldOperator.Steps = []v1alpha1.ScheduledStep{{Action: netplugin.StepTunnelPort, Value: 6090}}
	if f := n.Check(ctx, oldOperator); len(f.Problems) != 1 || !strings.Contains(f.Problems[0], "TunnelPort") {
		t.Errorf("a plan with the bridge's TunnelPort step: problems %q", f.Problems)
	}
	mtu := node(nil).Check(ctx, &v1alpha1.LiveChangePlan{ID: "mtu-3-1", Kind: v1alpha1.ChangeMTU, From: 1400, To: 1300, Encapsulation: v1alpha1.EncapGeneve})
	for _, p := range mtu.Problems {
		if strings.Contains(p, "Geneve") {
			t.Fatalf("an MTU change refused for the Geneve port: %q", mtu.Problems)
		}
	}
}
