package cni_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/testenv"
)

// systemPlugins is where Debian's containernetworking-plugins puts ptp and host-local.
const systemPlugins = "/usr/lib/cni"

// chain is a node: a network namespace that runs a real CNI chain (ptp with
// host-local addresses, then netshift-cni built from this tree) for pods
// that are namespaces of their own.
type chain struct {
	node, netConfig string
	cni             *libcni.CNIConfig
	list            *libcni.NetworkConfigList
}

func newChain(t *testing.T) *chain {
	t.Helper()
	testenv.RequireRoot(t)
	if _, err := os.Stat(filepath.Join(systemPlugins, "ptp")); err != nil {
		testenv.Require(t, &testenv.Missing{Reason: "needs the ptp and host-local CNI plugins in " + systemPlugins + " (Debian containernetworking-plugins; hack/setup.sh installs it)"})
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "netshift-cni"), "netshift.io/netshift/cmd/netshift-cni").CombinedOutput(); err != nil {
		t.Fatalf("build netshift-cni: %v\n%s", err, out)
	}
	node := fmt.Sprintf("cnitest-node-%d-%d", os.Getpid(), time.Now().UnixNano()%100000)
	netns(t, node)
	c := &chain{node: node, netConfig: filepath.Join(dir, "netshift", "network.json")}
	c.cni = libcni.NewCNIConfigWithCacheDir([]string{bin, systemPlugins}, filepath.Join(dir, "cache"), nil)
	list := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"lab","plugins":[
	  {"type":"ptp","mtu":1450,"ipam":{"type":"host-local","subnet":"198.18.200.0/24","dataDir":%q}},
	  {"type":"netshift-cni","networkConfig":%q,"lockTimeout":"300ms"}]}`, filepath.Join(dir, "ipam"), c.netConfig)
	var err error
	if c.list, err = libcni.ConfListFromBytes([]byte(list)); err != nil {
		t.Fatal(err)
	}
	return c
}

func netns(t *testing.T, name string) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
}

func (c *chain) writeMTU(t *testing.T, mtu int32) {
	t.Helper()
	if err := nodeconfig.Write(c.netConfig, nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{
		MTU: mtu, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}); err != nil {
		t.Fatal(err)
	}
}

// pod makes a pod namespace and the runtime's view of it.
func (c *chain) pod(t *testing.T, name string) *libcni.RuntimeConf {
	t.Helper()
	ns := fmt.Sprintf("%s-%s", c.node, name)
	netns(t, ns)
	return &libcni.RuntimeConf{ContainerID: "sandbox-" + name, NetNS: "/run/netns/" + ns, IfName: "eth0",
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "default"}, {"K8S_POD_NAME", name}}}
}

// inNode runs fn from the node's namespace: the plugins libcni starts inherit it.
func (c *chain) inNode(t *testing.T, fn func() error) error {
	t.Helper()
	return netdev.InNetns(c.node, fn)
}

func (c *chain) add(t *testing.T, rt *libcni.RuntimeConf) (*current.Result, error) {
	t.Helper()
	var res *current.Result
	err := c.inNode(t, func() error {
		r, err := c.cni.AddNetworkList(context.Background(), c.list, rt)
		if err != nil {
			return err
		}
		res, err = current.NewResultFromResult(r)
		return err
	})
	return res, err
}

func mtuOf(t *testing.T, netns, link string) int {
	t.Helper()
	h, err := netdev.Open(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mtu, err := h.MTU(link)
	if err != nil {
		t.Fatal(err)
	}
	return mtu
}

func hostEnd(t *testing.T, res *current.Result) string {
	t.Helper()
	for _, i := range res.Interfaces {
		if i.Sandbox == "" {
			return i.Name
		}
	}
	t.Fatalf("no node-side interface in the result %+v", res)
	return ""
}

func TestAddGivesThePodTheNodesMTU(t *testing.T) {
	c := newChain(t)
	c.writeMTU(t, 1350)
	rt := c.pod(t, "web-1")
	res, err := c.add(t, rt)
	if err != nil {
		t.Fatalf("ADD through ptp and netshift-cni: %v", err)
	}
	if got := mtuOf(t, rt.NetNS, "eth0"); got != 1350 {
		t.Errorf("pod eth0 MTU %d, want the node's 1350 (ptp made it 1450)", got)
	}
	host := hostEnd(t, res)
	if got := mtuOf(t, "/run/netns/"+c.node, host); got != 1350 {
		t.Errorf("node end %s MTU %d, want 1350", host, got)
	}
	var podIf *current.Interface
	for _, i := range res.Interfaces {
		if i.Sandbox == rt.NetNS {
			podIf = i
		}
	}
	if podIf == nil || podIf.Mtu != 1350 || len(res.IPs) != 1 {
		t.Fatalf("the result does not carry the pod's interface with MTU 1350 and its address: %+v", res)
	}

	// CHECK: as set, then after someone changed the pod's MTU.
	if err := c.inNode(t, func() error { return c.cni.CheckNetworkList(context.Background(), c.list, rt) }); err != nil {
		t.Fatalf("CHECK of a pod carrying the node's MTU: %v", err)
	}
	h, _ := netdev.Open(rt.NetNS)
	_ = h.SetMTU("eth0", 1400)
	h.Close()
	err = c.inNode(t, func() error { return c.cni.CheckNetworkList(context.Background(), c.list, rt) })
	if err == nil || !strings.Contains(err.Error(), "eth0 has MTU 1400, the node's configuration") || !strings.Contains(err.Error(), "says 1350") {
		t.Fatalf("CHECK of a pod with MTU 1400 on a 1350 node: %v", err)
	}

	// A live change rewrote the configuration: the next pod gets the new MTU, the first keeps its own.
	c.writeMTU(t, 1300)
	rt2 := c.pod(t, "web-2")
	if _, err := c.add(t, rt2); err != nil {
		t.Fatal(err)
	}
	if got := mtuOf(t, rt2.NetNS, "eth0"); got != 1300 {
		t.Errorf("pod created after the change: MTU %d, want 1300", got)
	}
	if err := c.inNode(t, func() error { return c.cni.DelNetworkList(context.Background(), c.list, rt) }); err != nil {
		t.Fatalf("DEL: %v", err)
	}
}

func TestAddWaitsForALiveChangesStep(t *testing.T) {
	c := newChain(t)
	c.writeMTU(t, 1450)
	step, err := nodeconfig.LockExclusive(context.Background(), c.netConfig)
	if err != nil {
		t.Fatal(err)
	}
	// The plugin waits (here 300 ms) and then fails, naming the lock: the pod is not set up
	// with a configuration that is being changed.
	_, err = c.add(t, c.pod(t, "blocked"))
	if err == nil || !strings.Contains(err.Error(), nodeconfig.LockPath(c.netConfig)) {
		t.Fatalf("ADD during a step's exclusive hold: %v", err)
	}
	// A step that ends within the wait: the pod gets what the step wrote.
	released := make(chan struct{})
	go func() {
		time.Sleep(100 * time.Millisecond)
		c.writeMTU(t, 1380)
		step.Unlock()
		close(released)
	}()
	rt := c.pod(t, "after")
	if _, err := c.add(t, rt); err != nil {
		t.Fatalf("ADD right after the step: %v", err)
	}
	<-released
	if got := mtuOf(t, rt.NetNS, "eth0"); got != 1380 {
		t.Errorf("pod set up across a step: MTU %d, want the step's 1380", got)
	}
}

func TestWithoutConfigurationThePodKeepsTheMainPluginsMTU(t *testing.T) {
	c := newChain(t)
	rt := c.pod(t, "plain")
	if _, err := c.add(t, rt); err != nil {
		t.Fatalf("ADD on a node netshift has not configured yet: %v", err)
	}
	if got := mtuOf(t, rt.NetNS, "eth0"); got != 1450 {
		t.Errorf("MTU %d, want ptp's 1450", got)
	}
	if err := c.inNode(t, func() error { return c.cni.DelNetworkList(context.Background(), c.list, rt) }); err != nil {
		t.Fatalf("DEL: %v", err)
	}
}

func TestVersionAndBadConfiguration(t *testing.T) {
	c := newChain(t)
	info, err := c.cni.GetVersionInfo(context.Background(), "netshift-cni")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(info.SupportedVersions(), ","); !strings.Contains(got, "1.0.0") || !strings.Contains(got, "1.1.0") {
		t.Errorf("supported versions %s", got)
	}
	bad, err := libcni.ConfListFromBytes([]byte(`{"cniVersion":"1.0.0","name":"lab","plugins":[
	  {"type":"ptp","ipam":{"type":"host-local","subnet":"198.18.201.0/24","dataDir":"` + t.TempDir() + `"}},
	  {"type":"netshift-cni","lockTimeout":"-5s"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rt := c.pod(t, "bad")
	err = c.inNode(t, func() error { _, err := c.cni.AddNetworkList(context.Background(), bad, rt); return err })
	if err == nil || !strings.Contains(err.Error(), `lockTimeout "-5s": want a duration above 0 and at most 2m`) {
		t.Fatalf("ADD with a negative lockTimeout: %v", err)
	}
}
