package ovnkubernetes

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/ovs"
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

// TestAGenevePortChangeNeedsTheCentralZone: the driver's preconditions take
// a Geneve port change on a node whose ovn-controller uses the central
// zone's southbound database, with the operator holding the Encap rows; they
// refuse it, saying why, on a node in a zone of its own, and when the plan
// gives the node a tunnel step of its own (an operator without the
// southbound database). An MTU change is never refused for it.
func TestAGenevePortChangeNeedsTheCentralZone(t *testing.T) {
	ctx := context.Background()
	node := func(ids map[string]string) *Node {
		t.Helper()
		sw, err := ovs.OpenSwitch(ctx, ovsmem.StartSwitchWith(t, ids))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sw.Close)
		return NewNode(nodenet.Env{Node: "node-1", Pods: nodenet.NoPods{}, Switch: sw})
	}
	port := &v1alpha1.LiveChangePlan{ID: "geneveport-3-1", Kind: v1alpha1.ChangeGenevePort, From: 6081, To: 6082, Encapsulation: v1alpha1.EncapGeneve}
	withTunnelStep := port.DeepCopy()
	withTunnelStep.Steps = []v1alpha1.ScheduledStep{{Action: netplugin.StepTunnelPort, Value: 6082}}
	central, own := map[string]string{"ovn-remote": "tcp:198.19.0.1:6642"}, map[string]string{"ovn-remote": "unix:/var/run/ovn/ovnsb_db.sock"}
	cases := []struct {
		name string
		ids  map[string]string
		plan *v1alpha1.LiveChangePlan
		want string // "" when taken
	}{
		{"central zone, the operator holds the Encap rows", central, port, ""},
		{"a zone of its own", own, port, "an OVN zone of its own (ovn-remote unix:/var/run/ovn/ovnsb_db.sock)"},
		{"no ovn-remote", nil, port, "external_ids:ovn-remote is empty"},
		{"the node given a tunnel step", central, withTunnelStep, "the operator needs the central zone's southbound database (--ovn-sb)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := node(c.ids).Check(ctx, c.plan)
			var geneve []string
			for _, p := range f.Problems {
				if strings.Contains(p, "Geneve") || strings.Contains(p, "Encap") {
					geneve = append(geneve, p)
				}
			}
			switch {
			case c.want == "" && len(geneve) > 0:
				t.Fatalf("refused: %q", geneve)
			case c.want != "" && (len(geneve) != 1 || !strings.Contains(geneve[0], c.want)):
				t.Fatalf("problems %q, want one saying %q", f.Problems, c.want)
			}
		})
	}
	mtu := node(own).Check(ctx, &v1alpha1.LiveChangePlan{ID: "mtu-3-1", Kind: v1alpha1.ChangeMTU, From: 1400, To: 1300, Encapsulation: v1alpha1.EncapGeneve})
	for _, p := range mtu.Problems {
		if strings.Contains(p, "Geneve") {
			t.Fatalf("an MTU change refused for the Geneve port: %q", mtu.Problems)
		}
	}
}
