package agent

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/kubenode/kubenodetest"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/ovsbridge"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/ovs/ovstest"
)

// linkMTUs reads every link's MTU in a network namespace (a name under
// /run/netns or a path).
func linkMTUs(t *testing.T, netns string) map[string]int {
	t.Helper()
	h, err := netdev.Open(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mtus, err := h.MTUs()
	if err != nil {
		t.Fatal(err)
	}
	return mtus
}

func pod(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", Labels: map[string]string{"app": "tenant"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{Name: "c", Image: images.WorkloadRef,
			ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/sleep", "3600"}}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// inPod runs a command of the machine inside a pod's network namespace.
func inPod(t *testing.T, s cri.Sandbox, args ...string) {
	t.Helper()
	path, err := s.NetnsPath("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("nsenter", append([]string{"--net=" + path, "--"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("in pod %s: %v: %v\n%s", s, args, err, out)
	}
}

// A live change's MTU steps on a real node (kubelet, containerd, the CNI
// chain, Open vSwitch) set what the node's runtime and OVS say, and nothing a
// tenant can write steers them: pods that carry the old annotations with
// hostile values, a host-network pod, a pod with NET_ADMIN that made a veth
// pair inside itself numbered like the node's eth0, a pod that renamed its
// eth0, a pod deleted before the step. The node's own links keep their MTU,
// every step succeeds, and a pod created afterwards gets the new MTU.
func TestMTUStepsOnARealNodeTouchOnlyWhatTheNodeSays(t *testing.T) {
	sw := ovstest.Start(t)
	c := kubenodetest.Start(t, kubenodetest.Options{Nodes: 1, Netns: map[int]string{0: sw.Netns}, MTU: 1450})
	node, cs, ctx := c.Nodes[0], c.Clients, context.Background()
	c.Namespace(t, "tenant")
	hostile := map[string]string{"netshift.io/host-interface": "eth0", "netshift.io/netns": "../proc/1/ns/net"}
	for _, p := range []*corev1.Pod{
		pod("good-1", nil), pod("good-2", nil),
		pod("annotated", func(p *corev1.Pod) { p.Annotations = hostile }),
		pod("missing-netns", func(p *corev1.Pod) { p.Annotations = map[string]string{"netshift.io/netns": "does-not-exist"} }),
		pod("hostnet", func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Annotations = hostile }),
		pod("veth-maker", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}),
		pod("renamer", nil), pod("doomed", nil),
	} {
		p.Spec.NodeName = node.Name
		if _, err := cs.CoreV1().Pods("tenant").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitPods(t, "tenant", "app=tenant", 8)

	// The network plugin's part: the pods' node ends join br-int.
	client, err := cri.Dial(node.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sandboxes, err := client.Sandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cri.Sandbox{}
	for _, s := range sandboxes {
		byName[s.Name] = s
		for _, h := range s.HostInterfaces {
			sw.Vsctl("add-port", "br-int", h)
		}
	}
	if _, ok := byName["hostnet"]; ok || len(byName) != 7 {
		t.Fatalf("sandboxes with a network of their own: %v", byName)
	}
	nodeEth0 := linkMTUs(t, sw.Netns)["eth0"]
	var eth0Index int
	if out, err := exec.Command("ip", "-n", sw.Netns, "-o", "link", "show", "eth0").Output(); err == nil {
		if _, err := fmt.Sscanf(string(out), "%d:", &eth0Index); err != nil {
			t.Fatalf("eth0's index in %q: %v", out, err)
		}
	}
	inPod(t, byName["veth-maker"], "ip", "link", "add", "inner0", "index", fmt.Sprint(eth0Index), "mtu", "1480", "type", "veth", "peer", "name", "inner1", "mtu", "1480")
	inPod(t, byName["renamer"], "ip", "link", "set", "eth0", "down")
	inPod(t, byName["renamer"], "ip", "link", "set", "eth0", "name", "eth9")
	before := linkMTUs(t, sw.Netns)

	a := &Agent{Node: node.Name, NodeNetns: sw.Netns, OVSDB: sw.Socket, Switch: sw.DB, NetworkConfig: c.NetworkConfig(0),
		Pods: &nodenet.RuntimePods{Endpoint: node.Socket()}, failSteps: map[v1alpha1.StepAction]int{}}
	a.Plugin = ovsbridge.NewNode(nodenet.Env{Node: a.Node, Netns: a.NodeNetns, Pods: a.Pods, Switch: a.Switch, LockPods: a.lockPods, Now: time.Now})
	network := v1alpha1.NodeNetworkConfig{MTU: 1350, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}
	plan := &v1alpha1.LiveChangePlan{ID: "mtu-1", Kind: v1alpha1.ChangeMTU, To: 1350, Encapsulation: v1alpha1.EncapVXLAN, Network: &network}
	if err := cs.CoreV1().Pods("tenant").Delete(ctx, "doomed", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	outcomes := map[v1alpha1.StepAction]netplugin.Outcome{}
	for _, action := range []v1alpha1.StepAction{netplugin.StepPodMTU, netplugin.StepHostVethMTU, netplugin.StepNodePortMTU, v1alpha1.StepNetworkConfig} {
		o, err := a.runStep(ctx, plan, v1alpha1.ScheduledStep{Action: action, Value: 1350})
		if err != nil {
			t.Fatalf("step %s failed on a node with hostile pods: %v", action, err)
		}
		outcomes[action] = o
	}
	if o := outcomes[netplugin.StepPodMTU]; o.Changed < 5 || !strings.Contains(strings.Join(o.Skipped, "\n"), "pod tenant/renamer: eth0") {
		t.Errorf("pod step: changed %d, skipped %v; want the five pods with their eth0 set and the renamed one skipped", o.Changed, o.Skipped)
	}

	after := linkMTUs(t, sw.Netns)
	for name, mtu := range before {
		changed := after[name] != mtu
		isPodEnd := false
		for _, s := range byName {
			for _, h := range s.HostInterfaces {
				isPodEnd = isPodEnd || h == name
			}
		}
		if name == "br-int" || isPodEnd {
			if s, ok := byName["renamer"]; ok && len(s.HostInterfaces) == 1 && s.HostInterfaces[0] == name {
				continue // its node end is the node's, set like any other
			}
			if after[name] != 1350 && name != "br-int" {
				t.Errorf("node end %s: MTU %d, want 1350", name, after[name])
			}
			continue
		}
		if changed {
			t.Errorf("node link %s changed MTU %d -> %d: only pod ends and the integration bridge may change", name, mtu, after[name])
		}
	}
	if after["eth0"] != nodeEth0 {
		t.Errorf("node eth0 MTU %d -> %d", nodeEth0, after["eth0"])
	}
	if got := sw.Vsctl("get", "interface", "br-int", "mtu_request"); got != "1350" {
		t.Errorf("br-int mtu_request %q, want 1350 (the node's own port into the pod network, from its OVS)", got)
	}
	for _, name := range []string{"good-1", "good-2", "annotated", "missing-netns", "veth-maker"} {
		path, err := byName[name].NetnsPath("/proc")
		if err != nil {
			t.Fatal(err)
		}
		got := linkMTUs(t, path)
		if got["eth0"] != 1350 {
			t.Errorf("pod %s: eth0 MTU %d, want 1350", name, got["eth0"])
		}
		if name == "veth-maker" && (got["inner0"] != 1480 || got["inner1"] != 1480) {
			t.Errorf("the veth pair the pod made inside itself changed: %v", got)
		}
	}
	if f, err := nodeconfig.Read(c.NetworkConfig(0)); err != nil || f.MTU != 1350 {
		t.Fatalf("node configuration after the change: %+v, %v", f, err)
	}

	// A pod created after the change gets the new MTU through the real CNI chain.
	if _, err := cs.CoreV1().Pods("tenant").Create(ctx, pod("late", func(p *corev1.Pod) { p.Spec.NodeName = node.Name; p.Labels = map[string]string{"app": "late"} }), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitPods(t, "tenant", "app=late", 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, _ := client.Sandboxes(ctx)
		for _, s := range list {
			if s.Name == "late" {
				path, _ := s.NetnsPath("/proc")
				h, err := netdev.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				mtu, _ := h.MTU("eth0")
				h.Close()
				if mtu != 1350 {
					t.Fatalf("pod created after the change: eth0 MTU %d, want 1350", mtu)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the late pod's sandbox never showed in the runtime")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
