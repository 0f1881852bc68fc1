package agent

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"netshift.io/netshift/internal/cni"
)

// TestCNIInstallPutsItselfBackAtOnce: a network plugin that rewrites its
// configuration list drops netshift-cni from it; the agent chains it again
// within moments, long before its period (an hour here) comes round.
func TestCNIInstallPutsItselfBackAtOnce(t *testing.T) {
	_, conf, bin, plugin := nodeCNIDirs(t)
	list := filepath.Join(conf, "10-pods.conflist")
	const plain = `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"ovn-k8s-cni-overlay","mtu":1400}]}`
	if err := os.WriteFile(list, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- CNIInstall{Plugin: plugin, ConfDir: conf, BinDir: bin, NetworkConfig: "/n.json", Every: time.Hour}.Start(ctx)
	}()
	chained := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			data, _ := os.ReadFile(list)
			if strings.Contains(string(data), `"netshift-cni"`) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: netshift-cni not chained after 5 s: %s", what, data)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	chained("at start")
	time.Sleep(100 * time.Millisecond) // the watch is set before the first look
	if err := os.WriteFile(list, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	chained("after the network plugin rewrote its list")
	t.Logf("chained again %s after the rewrite", time.Since(start).Round(time.Millisecond))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestCNIInstallConvertsARewrittenConfAtOnce: OVN-Kubernetes writes its
// single plugin's .conf at every start, possibly with new content; netshift
// leaves it as written (ovnkube-node's readiness probe checks it is there)
// and the list it loads the runtime with instead follows the new content
// within moments, long before the agent's period; the .conf taken away
// takes the list with it.
func TestCNIInstallConvertsARewrittenConfAtOnce(t *testing.T) {
	_, conf, bin, plugin := nodeCNIDirs(t)
	ovn, list := filepath.Join(conf, "10-ovn-kubernetes.conf"), filepath.Join(conf, "10-ovn-kubernetes-netshift.conflist")
	const ovnConf = `{"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{},"dns":{},"logLevel":"4"}`
	if err := os.WriteFile(ovn, []byte(ovnConf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- CNIInstall{Plugin: plugin, ConfDir: conf, BinDir: bin, NetworkConfig: "/n.json", Every: time.Hour}.Start(ctx)
	}()
	// The .conf as ovnkube-node wrote it, and netshift's list, loaded first, holding its settings and netshift-cni.
	listed := func(what, written, setting string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			data, _ := os.ReadFile(list)
			kept, _ := os.ReadFile(ovn)
			if string(kept) != written {
				t.Fatalf("%s: the .conf is %s, want it as written, %s", what, kept, written)
			}
			if first, _ := runtimeFile(conf); first == list && strings.Contains(string(data), setting) && strings.Contains(string(data), `"netshift-cni"`) {
				return
			}
			if time.Now().After(deadline) {
				entries, _ := os.ReadDir(conf)
				t.Fatalf("%s: not listed with %s after 5 s: %v\n%s", what, setting, entries, data)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	listed("at start", ovnConf, `"logLevel": "4"`)
	time.Sleep(100 * time.Millisecond) // the watch is set before the first look
	rewritten := strings.Replace(ovnConf, `"logLevel":"4"`, `"logLevel":"5"`, 1)
	if err := os.WriteFile(ovn, []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	listed("after ovnkube-node wrote its .conf anew", rewritten, `"logLevel": "5"`)
	t.Logf("listed again %s after the rewrite", time.Since(start).Round(time.Millisecond))
	if err := os.Remove(ovn); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(list); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("netshift's list is still there 5 s after the .conf went")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// runtimeFile is the file the runtime loads from dir: the first of its
// .conf, .conflist and .json files by name (libcni's, sorted).
func runtimeFile(dir string) (string, error) {
	files, err := libcni.ConfFiles(dir, []string{".conf", ".conflist", ".json"})
	if err != nil || len(files) == 0 {
		return "", err
	}
	sort.Strings(files)
	return files[0], nil
}

// TestCNIInstallWaitsForThePoolNamespaces: with port pools, netshift-cni is
// chained (and the agent ready) only once the node lists its pool-enabled
// namespaces: chained before, it would hand a pooled pod the plugin's
// network.
func TestCNIInstallWaitsForThePoolNamespaces(t *testing.T) {
	dir, conf, bin, plugin := nodeCNIDirs(t)
	kubeconfig := filepath.Join(dir, "kubelet.conf")
	list := filepath.Join(conf, "10-pods.conflist")
	for path, data := range map[string]string{
		kubeconfig: "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://10.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
		list:       `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"ovn-k8s-cni-overlay","mtu":1400}]}`,
	} {
		if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	namespaces := filepath.Join(dir, "pool-namespaces.json")
	ready := new(atomic.Bool)
	install := CNIInstall{Plugin: plugin, ConfDir: conf, BinDir: bin, NetworkConfig: "/n.json", NodeKubeconfig: kubeconfig, Every: time.Hour,
		Pool:    &cni.PoolConfig{Node: "worker-1", Kubeconfig: filepath.Join(conf, "netshift-cni", "kubeconfig"), Namespaces: namespaces, StateDir: filepath.Join(dir, "state")},
		chained: ready}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- install.Start(ctx) }()
	time.Sleep(300 * time.Millisecond)
	if data, _ := os.ReadFile(list); strings.Contains(string(data), "netshift-cni") || cniChained("worker-1", ready) == nil {
		t.Fatalf("chained, or ready, before the node lists its pool namespaces: %s", data)
	}
	if err := cni.WritePoolNamespaces(namespaces, []string{"shop"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // the agent looks again every 2 s while it waits
	for cniChained("worker-1", ready) != nil {
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(list)
			t.Fatalf("not chained 10 s after the list was written: %s", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if data, _ := os.ReadFile(list); !strings.Contains(string(data), `"netshift-cni"`) {
		t.Errorf("ready, but not chained: %s", data)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// nodeCNIDirs makes a node's CNI directories (net.d and bin) in a temporary
// directory, and the netshift-cni binary to install from it.
func nodeCNIDirs(t *testing.T) (dir, conf, bin, plugin string) {
	t.Helper()
	dir = t.TempDir()
	conf, bin = filepath.Join(dir, "net.d"), filepath.Join(dir, "bin")
	for _, d := range []string{conf, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plugin = filepath.Join(dir, "netshift-cni")
	if err := os.WriteFile(plugin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, conf, bin, plugin
}
