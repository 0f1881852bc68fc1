package cri_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/kubenode"
	"netshift.io/netshift/internal/lab/kubenode/kubenodetest"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/testenv"
)

// node starts a real containerd in a node of its own (network and mount
// namespaces), with the lab's pause image imported and a CNI chain of ptp
// then netshift-cni, the node's applied MTU 1350.
func node(t *testing.T) (kubenode.Node, runtimeapi.RuntimeServiceClient) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, bin := range []string{"containerd", "runc", "ctr", "nsenter", "unshare", filepath.Join(kubenode.SystemCNIPlugins, "ptp")} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Require(t, &testenv.Missing{Reason: "needs " + bin + " (Debian containerd, runc, containernetworking-plugins; hack/setup.sh installs them)"})
		}
	}
	dir := t.TempDir()
	bins, archives := kubenodetest.Build(t, dir)
	id := fmt.Sprintf("%d", os.Getpid()%100000)
	n := kubenode.Node{Name: "critest-" + id, Netns: "critest-" + id, IP: "198.19.0.1", Dir: filepath.Join(dir, "node"), CgroupRoot: "/netshift-critest-" + id}
	if out, err := exec.Command("ip", "netns", "add", n.Netns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.Netns).Run() })
	var running kubenode.Running
	record := func(p kubenode.Proc) error {
		switch {
		case strings.HasPrefix(p.Role, "holder:"):
			running.Holder = p.Pid
		case strings.HasPrefix(p.Role, "containerd:"):
			running.Containerd = p.Pid
		}
		return nil
	}
	t.Cleanup(func() {
		if err := n.Stop(running); err != nil {
			t.Errorf("stop the node: %v", err)
		}
	})
	ctx := context.Background()
	holder, err := n.StartHolder(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	err = n.InstallCNI([]byte(`{"cniVersion":"1.0.0","name":"lab","plugins":[
	  {"type":"ptp","mtu":1450,"ipam":{"type":"host-local","subnet":"198.18.210.0/24"}},
	  {"type":"netshift-cni"}]}`), map[string]string{
		"ptp": filepath.Join(kubenode.SystemCNIPlugins, "ptp"), "host-local": filepath.Join(kubenode.SystemCNIPlugins, "host-local"),
		"loopback": filepath.Join(kubenode.SystemCNIPlugins, "loopback"), "netshift-cni": filepath.Join(bins, "netshift-cni")})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeconfig.Write(n.Path("/var/lib/netshift/network.json"), nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{
		MTU: 1350, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.StartContainerd(ctx, holder, images.PauseRef, record); err != nil {
		t.Fatal(err)
	}
	if err := n.ImportImages(ctx, archives...); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+n.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return n, runtimeapi.NewRuntimeServiceClient(conn)
}

func runSandbox(t *testing.T, n kubenode.Node, rt runtimeapi.RuntimeServiceClient, name string, hostNetwork bool) string {
	t.Helper()
	mode := runtimeapi.NamespaceMode_POD
	if hostNetwork {
		mode = runtimeapi.NamespaceMode_NODE
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		LogDirectory: "/var/log/pods/default_" + name,
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: n.CgroupRoot + "/pod-" + name,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: mode}}},
	}
	if !hostNetwork {
		cfg.Hostname = name // as the kubelet does: a host-network pod has the node's
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("run sandbox %s: %v\ncontainerd log ends:\n%s", name, err, kubenodetest.Tail(n.LogPath("containerd")))
	}
	return r.PodSandboxId
}

func TestSandboxesFromARealContainerd(t *testing.T) {
	n, rt := node(t)
	web := runSandbox(t, n, rt, "web", false)
	hostnet := runSandbox(t, n, rt, "hostnet", true)

	c, err := cri.Dial(n.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if v, err := c.Runtime(ctx); err != nil || !strings.HasPrefix(v, "containerd") {
		t.Fatalf("runtime %q, %v", v, err)
	}
	list, err := c.Sandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != web || list[0].String() != "default/web" || list[0].UID != "uid-web" {
		t.Fatalf("sandboxes %+v: want only default/web (%s); the host-network one (%s) has nothing to change", list, web, hostnet)
	}
	s := list[0]
	if strings.Join(s.PodInterfaces, ",") != "eth0" || len(s.HostInterfaces) != 1 || !strings.HasPrefix(s.HostInterfaces[0], "veth") {
		t.Fatalf("interfaces from the CNI result: pod %v, node %v", s.PodInterfaces, s.HostInterfaces)
	}
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
	if err != nil || mtu != 1350 {
		t.Fatalf("eth0 of the sandbox: MTU %d, %v; want 1350, the node's, set by netshift-cni through containerd", mtu, err)
	}
	h, _ = netdev.Open("/run/netns/" + n.Netns)
	hostMTU, err := h.MTU(s.HostInterfaces[0])
	h.Close()
	if err != nil || hostMTU != 1350 {
		t.Fatalf("node end %s: MTU %d, %v; want 1350", s.HostInterfaces[0], hostMTU, err)
	}

	// A pid that is not the sandbox's is refused.
	other := s
	other.Pid = os.Getpid()
	if _, err := other.NetnsPath("/proc"); err == nil || !strings.Contains(err.Error(), "is no longer sandbox") {
		t.Fatalf("NetnsPath with a pid of another process: %v", err)
	}

	// The client remembers the sandboxes it read: a later listing still
	// shows a sandbox started since, and no longer one stopped since.
	api := runSandbox(t, n, rt, "api", false)
	if list, err := c.Sandboxes(ctx); err != nil || len(list) != 2 {
		t.Fatalf("after sandbox api (%s) started: %+v, %v", api, list, err)
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: web}); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Sandboxes(ctx); err != nil || len(list) != 1 || list[0].ID != api || list[0].String() != "default/api" {
		t.Fatalf("after sandbox web stopped: %+v, %v; want only default/api", list, err)
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: api}); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Sandboxes(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after the sandboxes stopped: %+v, %v", list, err)
	}
}
