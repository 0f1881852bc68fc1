package kubenode_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/kubenode"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/testenv"
)

// The test's own addresses (the lab uses 198.19.0.0/24 for its underlay).
const (
	testNet    = "198.19.1"
	serviceNet = "198.19.129.0/24"
)

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// cluster is a control plane on the machine and n nodes, each a network
// namespace on a shared bridge with the machine, running containerd and a
// kubelet, with ptp then netshift-cni as the CNI chain.
type cluster struct {
	cp    *controlplane.ControlPlane
	cs    *kubernetes.Clientset
	nodes []kubenode.Node
	run   []*kubenode.Running
}

func newCluster(t *testing.T, count int) *cluster {
	t.Helper()
	testenv.RequireRoot(t)
	for _, bin := range []string{"containerd", "runc", "ctr", "nsenter", "unshare", "/bin/busybox", filepath.Join(kubenode.SystemCNIPlugins, "ptp")} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Require(t, &testenv.Missing{Reason: "needs " + bin + " (hack/setup.sh installs containerd, runc, containernetworking-plugins, busybox-static)"})
		}
	}
	assets, err := controlplane.AssetsDir()
	testenv.Require(t, err)
	if _, err := os.Stat(filepath.Join(assets, "kubelet")); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "no kubelet in " + assets + ": run hack/envtest-assets.sh"})
	}
	dir := t.TempDir()
	bins := filepath.Join(dir, "bin")
	for out, pkg := range map[string]string{"netshift-cni": "netshift.io/netshift/cmd/netshift-cni", "netshift-pause": "netshift.io/netshift/internal/images/pause"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bins, out), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
	}
	var archives []string
	for name, build := range map[string]func() (images.Image, error){
		"pause":    func() (images.Image, error) { return images.PauseImage(filepath.Join(bins, "netshift-pause")) },
		"workload": func() (images.Image, error) { return images.WorkloadImage("/bin/busybox") },
	} {
		img, err := build()
		if err != nil {
			t.Fatal(err)
		}
		a := filepath.Join(dir, name+".tar")
		if _, err := img.WriteArchiveFile(a); err != nil {
			t.Fatal(err)
		}
		archives = append(archives, a)
	}

	id := os.Getpid() % 10000
	bridge := fmt.Sprintf("knbr%d", id)
	sh(t, "ip", "link", "add", bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	sh(t, "ip", "addr", "add", testNet+".254/24", "dev", bridge)
	sh(t, "ip", "link", "set", bridge, "up")

	c := &cluster{}
	c.cp, err = controlplane.StartWith(controlplane.Options{Address: testNet + ".254", Cluster: true, ServiceCIDR: serviceNet, Dir: filepath.Join(dir, "cp")})
	testenv.Require(t, err)
	t.Cleanup(c.cp.Stop)
	c.cs = kubernetes.NewForConfigOrDie(c.cp.Admin)

	ctx := context.Background()
	for i := 1; i <= count; i++ {
		name := fmt.Sprintf("kn%d-%d", id, i)
		n := kubenode.Node{Name: name, Netns: name, IP: fmt.Sprintf("%s.%d", testNet, i), Dir: filepath.Join(dir, name),
			CgroupRoot: "/netshift-" + name, Kubelet: filepath.Join(assets, "kubelet"), Labels: map[string]string{"netshift.io/test": "kubenode"}}
		sh(t, "ip", "netns", "add", name)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
		veth := fmt.Sprintf("kn%dv%d", id, i)
		sh(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", veth).Run() })
		sh(t, "ip", "link", "set", veth, "master", bridge, "up")
		sh(t, "ip", "-n", name, "addr", "add", n.IP+"/24", "dev", "eth0")
		sh(t, "ip", "-n", name, "link", "set", "eth0", "up")
		sh(t, "ip", "-n", name, "link", "set", "lo", "up")
		n.Kubeconfig, err = c.cp.UserKubeconfig(dir, "system:node:"+name, "system:nodes")
		if err != nil {
			t.Fatal(err)
		}
		r := &kubenode.Running{}
		c.nodes, c.run = append(c.nodes, n), append(c.run, r)
		t.Cleanup(func() {
			if err := n.Stop(*r); err != nil {
				t.Errorf("stop node %s: %v", n.Name, err)
			}
			for _, p := range []int{r.Holder, r.Containerd, r.Kubelet} {
				if p > 0 && kubenode.Alive(p) {
					t.Errorf("node %s: process %d still runs after Stop", n.Name, p)
				}
			}
		})
		record := func(p kubenode.Proc) error {
			switch strings.SplitN(p.Role, ":", 2)[0] {
			case "holder":
				r.Holder = p.Pid
			case "containerd":
				r.Containerd = p.Pid
			case "kubelet":
				r.Kubelet = p.Pid
			}
			return nil
		}
		if _, err := n.StartHolder(ctx, record); err != nil {
			t.Fatal(err)
		}
		if err := n.InstallCNI([]byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"lab","plugins":[
		  {"type":"ptp","mtu":1450,"ipam":{"type":"host-local","subnet":"198.18.%d.0/24"}},{"type":"netshift-cni"}]}`, 100+i)),
			map[string]string{"ptp": filepath.Join(kubenode.SystemCNIPlugins, "ptp"), "host-local": filepath.Join(kubenode.SystemCNIPlugins, "host-local"),
				"loopback": filepath.Join(kubenode.SystemCNIPlugins, "loopback"), "netshift-cni": filepath.Join(bins, "netshift-cni")}); err != nil {
			t.Fatal(err)
		}
		if err := nodeconfig.Write(n.Path("/var/lib/netshift/network.json"), nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{
			MTU: int32(1300 + 10*i), Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.StartContainerd(ctx, r.Holder, images.PauseRef, record); err != nil {
			t.Fatal(err)
		}
		if err := n.ImportImages(ctx, archives...); err != nil {
			t.Fatal(err)
		}
		if _, err := n.StartKubelet(ctx, r.Holder, record); err != nil {
			t.Fatal(err)
		}
	}
	c.waitReady(t)
	return c
}

func (c *cluster) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ready := 0
		list, err := c.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, n := range list.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready == len(c.nodes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes Ready after 90 s; kubelet log of %s ends:\n%s", ready, len(c.nodes), c.nodes[0].Name, tailFile(c.nodes[0].LogPath("kubelet")))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tailFile(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}

func TestRealNodesRunPodsThroughTheCNIChain(t *testing.T) {
	c := newCluster(t, 2)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicas := int32(4)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
			Containers: []corev1.Container{{Name: "web", Image: images.WorkloadRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sleep", "3600"}}}}}}}
	if _, err := c.cs.AppsV1().Deployments("web").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := c.cs.CoreV1().Pods("web").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				pods = append(pods, p)
			}
		}
		if len(pods) == int(replicas) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods Running after 2 minutes: %+v\nkubelet log ends:\n%s", len(pods), replicas, list.Items, tailFile(c.nodes[0].LogPath("kubelet")))
		}
		time.Sleep(200 * time.Millisecond)
	}
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
		if len(p.Status.ContainerStatuses) != 1 || !strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://") {
			t.Errorf("pod %s: container status %+v, want a containerd container", p.Name, p.Status.ContainerStatuses)
		}
		if p.Spec.ServiceAccountName != "default" || len(p.Spec.Volumes) == 0 {
			t.Errorf("pod %s has no ServiceAccount token volume: %+v", p.Name, p.Spec.Volumes)
		}
	}
	if len(perNode) != 2 {
		t.Errorf("pods per node %v: the scheduler should spread them over both nodes", perNode)
	}

	// Each pod has its node's MTU (1310 and 1320), set by netshift-cni in containerd's CNI
	// chain, as the node's runtime shows it.
	for i, n := range c.nodes {
		client, err := cri.Dial(n.Socket())
		if err != nil {
			t.Fatal(err)
		}
		sandboxes, err := client.Sandboxes(ctx)
		client.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxes) != perNode[n.Name] {
			t.Errorf("node %s: the runtime has %d pod sandboxes, the API %d pods", n.Name, len(sandboxes), perNode[n.Name])
		}
		for _, s := range sandboxes {
			path, err := s.NetnsPath("/proc")
			if err != nil {
				t.Fatal(err)
			}
			h, err := netdev.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			mtu, err := h.MTU("eth0")
			h.Close()
			if want := 1300 + 10*(i+1); err != nil || mtu != want {
				t.Errorf("pod %s on %s: eth0 MTU %d, %v; want the node's %d", s, n.Name, mtu, err, want)
			}
		}
	}

	// The real disruption controller enforces a PodDisruptionBudget: with no room, an
	// eviction is refused.
	minAvailable := intstr.FromInt32(replicas)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := c.cs.PolicyV1().PodDisruptionBudgets("web").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var evictErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		evictErr = c.cs.CoreV1().Pods("web").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Name, Namespace: "web"}})
		if apierrors.IsTooManyRequests(evictErr) {
			break
		}
	}
	if !apierrors.IsTooManyRequests(evictErr) || !strings.Contains(evictErr.Error(), "disruption budget") {
		t.Fatalf("eviction under a budget with no room: %v; want 429 from the disruption budget", evictErr)
	}
}
