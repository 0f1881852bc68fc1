// Package kubenodetest runs a small real Kubernetes cluster for tests: the
// control plane on the machine (with kube-controller-manager and
// kube-scheduler) and nodes that are network namespaces running containerd
// and a kubelet, whose CNI chain is ptp then netshift-cni. It skips a test
// (fails it under CI=true) when root or a binary is missing.
package kubenodetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/kubenode"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/testenv"
)

// Options shape the cluster.
type Options struct {
	// Nodes is how many nodes (default 1).
	Nodes int
	// Netns, when set for a node (by index), is an existing network namespace to make
	// that node of (say, one where a test's Open vSwitch runs).
	Netns map[int]string
	// MTU is each node's applied pod MTU in its network configuration (default 1450).
	MTU int32
}

// Cluster is the running cluster.
type Cluster struct {
	CP      *controlplane.ControlPlane
	Clients *kubernetes.Clientset
	Nodes   []kubenode.Node
	Running []*kubenode.Running
}

// The tests' own addresses (the lab's underlay is 198.19.0.0/24).
const (
	testNet    = "198.19.1"
	serviceNet = "198.19.129.0/24"
)

var seq atomic.Int32

// Start starts the cluster and stops it when the test ends.
func Start(t *testing.T, o Options) *Cluster {
	t.Helper()
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.MTU == 0 {
		o.MTU = 1450
	}
	testenv.RequireRoot(t)
	for _, bin := range []string{"containerd", "runc", "ctr", "nsenter", "unshare", "/bin/busybox", filepath.Join(kubenode.SystemCNIPlugins, "ptp")} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Require(t, &testenv.Missing{Reason: "needs " + bin + " (hack/setup.sh installs containerd, runc, containernetworking-plugins, busybox-static)"})
		}
	}
	assets, aerr := controlplane.AssetsDir()
	testenv.Require(t, aerr)
	if _, err := os.Stat(filepath.Join(assets, "kubelet")); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "no kubelet in " + assets + ": run hack/envtest-assets.sh"})
	}
	// Short: the nodes' unix sockets live below it, and a socket path has at most 107 bytes.
	dir, err := os.MkdirTemp("", "kn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bins, archives := Build(t, dir)

	id := int(seq.Add(1))*10000 + os.Getpid()%10000
	bridge := fmt.Sprintf("knb%d", id)
	sh(t, "ip", "link", "add", bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	sh(t, "ip", "addr", "add", testNet+".254/24", "dev", bridge)
	sh(t, "ip", "link", "set", bridge, "up")

	c := &Cluster{}
	c.CP, err = controlplane.StartWith(controlplane.Options{Address: testNet + ".254", Cluster: true, ServiceCIDR: serviceNet, Dir: filepath.Join(dir, "cp")})
	testenv.Require(t, err)
	t.Cleanup(c.CP.Stop)
	c.Clients = kubernetes.NewForConfigOrDie(c.CP.Admin)

	ctx := context.Background()
	for i := 1; i <= o.Nodes; i++ {
		name := fmt.Sprintf("kn%d-%d", id, i)
		netns := o.Netns[i-1]
		if netns == "" {
			netns = name
			sh(t, "ip", "netns", "add", netns)
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", netns).Run() })
		}
		n := kubenode.Node{Name: name, Netns: netns, IP: fmt.Sprintf("%s.%d", testNet, i), Dir: filepath.Join(dir, name),
			CgroupRoot: "/netshift-" + name, Kubelet: filepath.Join(assets, "kubelet"), Labels: map[string]string{"netshift.io/test": "kubenode"}}
		veth := fmt.Sprintf("kn%dv%d", id, i)
		sh(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", veth).Run() })
		sh(t, "ip", "link", "set", veth, "master", bridge, "up")
		sh(t, "ip", "-n", netns, "addr", "add", n.IP+"/24", "dev", "eth0")
		sh(t, "ip", "-n", netns, "link", "set", "eth0", "up")
		sh(t, "ip", "-n", netns, "link", "set", "lo", "up")
		n.Kubeconfig, err = c.CP.UserKubeconfig(dir, "system:node:"+name, "system:nodes")
		if err != nil {
			t.Fatal(err)
		}
		r := &kubenode.Running{}
		c.Nodes, c.Running = append(c.Nodes, n), append(c.Running, r)
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
		  {"type":"ptp","mtu":1500,"ipam":{"type":"host-local","subnet":"198.18.%d.0/24"}},{"type":"netshift-cni"}]}`, 100+i)),
			map[string]string{"ptp": filepath.Join(kubenode.SystemCNIPlugins, "ptp"), "host-local": filepath.Join(kubenode.SystemCNIPlugins, "host-local"),
				"loopback": filepath.Join(kubenode.SystemCNIPlugins, "loopback"), "netshift-cni": filepath.Join(bins, "netshift-cni")}); err != nil {
			t.Fatal(err)
		}
		if err := nodeconfig.Write(c.NetworkConfig(i-1), nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{
			MTU: o.MTU, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}); err != nil {
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

// Build builds netshift-cni and the lab's pause program into dir/bin (static,
// as the images carry them) and writes the pause and workload images into
// dir; it returns the binaries' directory and the archives.
func Build(t *testing.T, dir string) (bins string, archives []string) {
	t.Helper()
	bins = filepath.Join(dir, "bin")
	for out, pkg := range map[string]string{"netshift-cni": "netshift.io/netshift/cmd/netshift-cni", "netshift-pause": "netshift.io/netshift/internal/images/pause"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bins, out), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
	}
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
	return bins, archives
}

// NetworkConfig is node i's applied network configuration, as seen from the machine.
func (c *Cluster) NetworkConfig(i int) string {
	return c.Nodes[i].Path("/var/lib/netshift/network.json")
}

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (c *Cluster) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ready := 0
		list, err := c.Clients.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, n := range list.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready == len(c.Nodes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes Ready after 90 s; kubelet log of %s ends:\n%s", ready, len(c.Nodes), c.Nodes[0].Name, Tail(c.Nodes[0].LogPath("kubelet")))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Tail is the end of a log file, for a failure message.
func Tail(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}

// WaitPods waits until count pods of namespace ns matching selector run with
// an IP, and returns them.
func (c *Cluster) WaitPods(t *testing.T, ns, selector string, count int) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := c.Clients.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		var running []corev1.Pod
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				running = append(running, p)
			}
		}
		if len(running) >= count {
			return running
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods %s in %s Running after 2 minutes; kubelet log ends:\n%s", len(running), count, selector, ns, Tail(c.Nodes[0].LogPath("kubelet")))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Namespace creates a namespace and waits for the controller manager to give
// it its default ServiceAccount, without which no pod is admitted.
func (c *Cluster) Namespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Clients.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Clients.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s has no default ServiceAccount after 30 s (kube-controller-manager?)", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
