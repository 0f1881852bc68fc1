package cni

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
)

const mainList = `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"ovn-k8s-cni-overlay","mtu":1400},{"type":"portmap","capabilities":{"portMappings":true}}]}`

func pluginTypes(t *testing.T, list []byte) []string {
	t.Helper()
	var l struct {
		Name    string
		Plugins []map[string]any
	}
	if err := json.Unmarshal(list, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Plugins {
		out = append(out, p["type"].(string))
	}
	return out
}

func TestChainAppendsOnceAndKeepsTheNetworkPluginsEntries(t *testing.T) {
	out, changed, err := Chain([]byte(mainList), "/var/lib/netshift/network.json", nil)
	if err != nil || !changed {
		t.Fatalf("Chain: %v, changed %v", err, changed)
	}
	if got := strings.Join(pluginTypes(t, out), ","); got != "ovn-k8s-cni-overlay,portmap,netshift-cni" {
		t.Fatalf("plugins %s", got)
	}
	if !strings.Contains(string(out), `"mtu": 1400`) || !strings.Contains(string(out), `"name": "pods"`) {
		t.Fatalf("the network plugin's settings were lost: %s", out)
	}
	again, changed, err := Chain(out, "/var/lib/netshift/network.json", nil)
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("chaining twice changed the list: %v %v", err, changed)
	}
	moved, changed, _ := Chain(out, "/etc/netshift/network.json", nil)
	if !changed || strings.Count(string(moved), "netshift-cni") != 1 || !strings.Contains(string(moved), "/etc/netshift/network.json") {
		t.Fatalf("a new configuration path: %s", moved)
	}
	for _, bad := range []string{`{`, `{"plugins":[]}`, `{"type":"bridge"}`} {
		if _, _, err := Chain([]byte(bad), "x", nil); err == nil {
			t.Errorf("Chain(%s) accepted", bad)
		}
	}
}

// TestChainWrapsTheNetworkPluginForPools: with pools, netshift-cni becomes
// the first entry, carrying the network plugin's own entry untouched as its
// delegate; a new setting rewraps, and turning pools off restores the list.
func TestChainWrapsTheNetworkPluginForPools(t *testing.T) {
	pool := &PoolConfig{Node: "worker-1", Kubeconfig: "/etc/cni/net.d/netshift-cni/kubeconfig", Namespaces: "/var/lib/netshift/pool-namespaces.json",
		StateDir: "/var/lib/netshift/cni", OVSDB: "unix:/run/openvswitch/db.sock", Bridge: "br-int", PlugMode: "per-port", MTU: 1400}
	out, changed, err := Chain([]byte(mainList), "/n.json", pool)
	if err != nil || !changed {
		t.Fatalf("Chain: %v, changed %v", err, changed)
	}
	if got := strings.Join(pluginTypes(t, out), ","); got != "netshift-cni,portmap,netshift-cni" {
		t.Fatalf("plugins %s", got)
	}
	c, err := ParseConfig(firstPlugin(t, out))
	if err != nil {
		t.Fatalf("the wrapping entry does not parse: %v", err)
	}
	if c.Pool == nil || c.Pool.Node != "worker-1" || c.Pool.Delegate["type"] != "ovn-k8s-cni-overlay" || c.Pool.Delegate["mtu"] != 1400.0 {
		t.Fatalf("wrapping entry %+v", c.Pool)
	}
	again, changed, err := Chain(out, "/n.json", pool)
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("wrapping twice changed the list: %v %v", err, changed)
	}
	direct := *pool
	direct.PlugMode = "direct"
	rewrapped, changed, err := Chain(out, "/n.json", &direct)
	if err != nil || !changed || strings.Count(string(rewrapped), "ovn-k8s-cni-overlay") != 1 || !strings.Contains(string(rewrapped), `"plugMode": "direct"`) {
		t.Fatalf("a new pool setting: %v, %v\n%s", err, changed, rewrapped)
	}
	plain, changed, err := Chain(rewrapped, "/n.json", nil)
	if err != nil || !changed {
		t.Fatalf("unwrap: %v, %v", err, changed)
	}
	if got := strings.Join(pluginTypes(t, plain), ","); got != "ovn-k8s-cni-overlay,portmap,netshift-cni" || strings.Contains(string(plain), "pool") {
		t.Fatalf("pools off: %s", plain)
	}
}

// firstPlugin is a list's first entry as the runtime hands it to the plugin.
func firstPlugin(t *testing.T, list []byte) []byte {
	t.Helper()
	var l struct {
		CNIVersion string           `json:"cniVersion"`
		Name       string           `json:"name"`
		Plugins    []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(list, &l); err != nil {
		t.Fatal(err)
	}
	p := l.Plugins[0]
	p["cniVersion"], p["name"] = l.CNIVersion, l.Name
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	conf, bin := filepath.Join(dir, "net.d"), filepath.Join(dir, "bin")
	for _, d := range []string{conf, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plugin := filepath.Join(dir, "netshift-cni")
	if err := os.WriteFile(plugin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(conf, bin, plugin, "/n.json", nil); err == nil || !strings.Contains(err.Error(), "no CNI configuration in") {
		t.Fatalf("before the network plugin wrote its list: %v", err)
	}
	if err := os.WriteFile(filepath.Join(conf, "10-pods.conflist"), []byte(mainList), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := Install(conf, bin, plugin, "/n.json", nil); err != nil || !changed {
		t.Fatalf("Install: %v, changed %v", err, changed)
	}
	if changed, err := Install(conf, bin, plugin, "/n.json", nil); err != nil || changed {
		t.Fatalf("a second Install changed something: %v, %v", err, changed)
	}
	data, _ := os.ReadFile(filepath.Join(conf, "10-pods.conflist"))
	if got := strings.Join(pluginTypes(t, data), ","); got != "ovn-k8s-cni-overlay,portmap,netshift-cni" {
		t.Fatalf("plugins %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(bin, "netshift-cni")); err != nil || string(b) != "binary" {
		t.Fatalf("plugin binary: %q, %v", b, err)
	}
}

// The single plugin configurations real network plugins write.
const (
	// OVN-Kubernetes' (ovnkube-node writes it at every start).
	ovnConf = `{"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{},"dns":{},"logFile":"/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log","logLevel":"4","logfile-maxsize":100,"logfile-maxbackups":5,"logfile-maxage":5}`
	// Multus' (thick plugin), delegating the cluster network to OVN-Kubernetes' file.
	multusConf = `{"cniVersion":"0.3.1","name":"multus-cni-network","type":"multus-shim","logLevel":"verbose","logToStderr":true,"clusterNetwork":"/host/etc/cni/net.d/10-ovn-kubernetes.conf"}`
	bridgeConf = `{"cniVersion":"1.0.0","name":"pods","type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.22.0.0/16"}}`
)

var testPool = &PoolConfig{Node: "worker-1", Kubeconfig: "/etc/cni/net.d/netshift-cni/kubeconfig", Namespaces: "/var/lib/netshift/pool-namespaces.json",
	StateDir: "/var/lib/netshift/cni", OVSDB: "unix:/run/openvswitch/db.sock", Bridge: "br-int", PlugMode: "per-port"}

// testNode is a node's two CNI directories and the netshift-cni to install.
type testNode struct{ conf, bin, plugin string }

// newTestNode writes files (a name ending in / is a directory) into a fresh
// configuration directory.
func newTestNode(t *testing.T, files map[string]string) testNode {
	t.Helper()
	dir := t.TempDir()
	n := testNode{filepath.Join(dir, "net.d"), filepath.Join(dir, "bin"), filepath.Join(dir, "netshift-cni")}
	for _, d := range []string{n.conf, n.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(n.plugin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.bin, "ovn-k8s-cni-overlay"), []byte("theirs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		n.write(t, name, content)
	}
	return n
}

func (n testNode) write(t *testing.T, name, content string) {
	t.Helper()
	path := filepath.Join(n.conf, name)
	if strings.HasSuffix(name, "/") {
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// files is everything under dir: a file's content by its relative path, a
// directory as its path with a trailing / and no content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(path)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(m map[string]string) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// sameJSON: the same JSON value, however written.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	return reflect.DeepEqual(va, vb)
}

// loaded is what a runtime makes of a configuration directory.
type loaded struct {
	File, Name, CNIVersion string
	Types                  []string
	Plugins                []map[string]any
}

// runtimeLoads loads the directory as containerd does (go-cni's
// loadFromConfDir, with libcni): the first of its .conf, .conflist and .json
// files by name, a .conflist as a list and the others as one plugin's
// configuration.
func runtimeLoads(t *testing.T, dir string) loaded {
	t.Helper()
	found, err := libcni.ConfFiles(dir, []string{".conf", ".conflist", ".json"})
	if err != nil || len(found) == 0 {
		t.Fatalf("the runtime finds no configuration in %s: %v", dir, err)
	}
	sort.Strings(found)
	l := loaded{File: filepath.Base(found[0])}
	var raw [][]byte
	if strings.HasSuffix(found[0], ".conflist") {
		list, err := libcni.ConfListFromFile(found[0])
		if err != nil {
			t.Fatalf("the runtime cannot load %s: %v", found[0], err)
		}
		l.Name, l.CNIVersion = list.Name, list.CNIVersion
		for _, p := range list.Plugins {
			l.Types, raw = append(l.Types, p.Network.Type), append(raw, p.Bytes)
		}
	} else {
		data, _ := os.ReadFile(found[0])
		c, err := libcni.NetworkPluginConfFromBytes(data)
		if err != nil {
			t.Fatalf("the runtime cannot load %s: %v", found[0], err)
		}
		l.Name, l.CNIVersion, l.Types, raw = c.Network.Name, c.Network.CNIVersion, []string{c.Network.Type}, [][]byte{data}
	}
	for _, r := range raw {
		var p map[string]any
		if err := json.Unmarshal(r, &p); err != nil {
			t.Fatal(err)
		}
		l.Plugins = append(l.Plugins, p)
	}
	return l
}

// networkPlugin is the network plugin's entry the runtime runs for a pod:
// the list's first, or the one netshift-cni wraps there.
func (l loaded) networkPlugin(t *testing.T) string {
	t.Helper()
	p := l.Plugins[0]
	if pool, ok := p["pool"].(map[string]any); ok && p["type"] == PluginName {
		p, _ = pool["delegate"].(map[string]any)
	}
	raw, _ := json.Marshal(p)
	return string(raw)
}

// TestListNameSortsJustBeforeItsFile: the runtime sorts whole names
// (sort.Strings); netshift's list of a file comes just before it, whatever
// the base name holds.
func TestListNameSortsJustBeforeItsFile(t *testing.T) {
	for _, conf := range []string{"10-ovn-kubernetes.conf", "00-multus.conf", "10-pods.json", "a.conf", "10-a.b.conf", "x-.conf", "-.json", "10-netshift.conf"} {
		list := listName(conf)
		names := []string{conf, list}
		sort.Strings(names)
		if names[0] != list || !strings.HasSuffix(list, ".conflist") || strings.TrimSuffix(list, listSuffix) != strings.TrimSuffix(conf, filepath.Ext(conf)) {
			t.Errorf("%s: its list %s sorts as %v", conf, list, names)
		}
	}
	if got := listName("10-ovn-kubernetes.conf"); got != "10-ovn-kubernetes-netshift.conflist" {
		t.Errorf("listName: %s", got)
	}
}

// madeOf is the file netshift's list in n's directory says it was made of.
func (n testNode) madeOf(t *testing.T, list string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.conf, list))
	if err != nil {
		t.Fatal(err)
	}
	from, err := madeFrom(list, data)
	if err != nil {
		t.Fatal(err)
	}
	return from
}

// netshiftsList is netshift's list of conf (named from), as Install writes it.
func netshiftsList(conf, from string) string {
	list, err := listOf([]byte(conf), from, nil, "/n.json", nil)
	if err != nil {
		panic(err)
	}
	return string(list)
}

func TestInstallChainsTheFileTheRuntimeUses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		pool  bool
		// what the runtime loads afterwards: its file, name, cniVersion, plugin types,
		// and the network plugin's entry (the .conf's content, whole)
		file, network, version, types, entry string
		// the file netshift's list says it was made of; "" for a list chained in place
		from string
	}{
		{name: "OVN-Kubernetes' .conf", files: map[string]string{"10-ovn-kubernetes.conf": ovnConf},
			file: "10-ovn-kubernetes-netshift.conflist", network: "ovn-kubernetes", version: "0.4.0", types: "ovn-k8s-cni-overlay,netshift-cni", entry: ovnConf,
			from: "10-ovn-kubernetes.conf"},
		{name: "OVN-Kubernetes' .conf, with pools", files: map[string]string{"10-ovn-kubernetes.conf": ovnConf}, pool: true,
			file: "10-ovn-kubernetes-netshift.conflist", network: "ovn-kubernetes", version: "0.4.0", types: "netshift-cni,netshift-cni", entry: ovnConf,
			from: "10-ovn-kubernetes.conf"},
		{name: "Multus' 00-multus.conf before OVN-Kubernetes'",
			files: map[string]string{"00-multus.conf": multusConf, "10-ovn-kubernetes.conf": ovnConf, "multus.d/": "", "multus.d/multus.kubeconfig": "k"},
			file:  "00-multus-netshift.conflist", network: "multus-cni-network", version: "0.3.1", types: "multus-shim,netshift-cni", entry: multusConf,
			from: "00-multus.conf"},
		{name: "a .json", files: map[string]string{"10-pods.json": bridgeConf},
			file: "10-pods-netshift.conflist", network: "pods", version: "1.0.0", types: "bridge,netshift-cni", entry: bridgeConf, from: "10-pods.json"},
		{name: "a .conflist before a .conf", files: map[string]string{"05-pods.conflist": mainList, "10-ovn-kubernetes.conf": ovnConf},
			file: "05-pods.conflist", network: "pods", version: "1.0.0", types: "ovn-k8s-cni-overlay,portmap,netshift-cni",
			entry: `{"type":"ovn-k8s-cni-overlay","mtu":1400}`},
		{name: "a plugin's list named like netshift's", files: map[string]string{"10-ovn-kubernetes-netshift.conflist": mainList, "10-ovn-kubernetes.conf": ovnConf},
			file: "10-ovn-kubernetes-netshift.conflist", network: "pods", version: "1.0.0", types: "ovn-k8s-cni-overlay,portmap,netshift-cni",
			entry: `{"type":"ovn-k8s-cni-overlay","mtu":1400}`},
		{name: "what the runtime does not read is left alone",
			files: map[string]string{"10-ovn-kubernetes.conf": ovnConf, "00-old.conf.bak": bridgeConf, "00-dir.conf/": "", "netshift-cni/": "", "netshift-cni/kubeconfig": "k", "README": "r",
				"20-broken.conflist": `{"name":`},
			file: "10-ovn-kubernetes-netshift.conflist", network: "ovn-kubernetes", version: "0.4.0", types: "ovn-k8s-cni-overlay,netshift-cni", entry: ovnConf,
			from: "10-ovn-kubernetes.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, tc.files)
			var pool *PoolConfig
			if tc.pool {
				pool = testPool
			}
			before := files(t, n.conf)
			if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil || !changed {
				t.Fatalf("Install: %v, changed %v", err, changed)
			}
			l := runtimeLoads(t, n.conf)
			if l.File != tc.file || l.Name != tc.network || l.CNIVersion != tc.version || strings.Join(l.Types, ",") != tc.types {
				t.Fatalf("the runtime loads %s: network %s, cniVersion %s, plugins %v", l.File, l.Name, l.CNIVersion, l.Types)
			}
			if got := l.networkPlugin(t); !sameJSON(t, got, tc.entry) {
				t.Fatalf("the network plugin's entry %s, want %s", got, tc.entry)
			}
			if got := n.madeOf(t, tc.file); got != tc.from {
				t.Fatalf("%s says it was made of %q, want %q", tc.file, got, tc.from)
			}
			// Everything else, the plugin's .conf included, byte for byte as it was.
			after := files(t, n.conf)
			if want := names(before) + " " + tc.file; names(after) != names(setOf(strings.Fields(want))) {
				t.Fatalf("the directory holds %s, want %s", names(after), want)
			}
			for name, was := range before {
				if name != tc.file && after[name] != was {
					t.Fatalf("%s changed: %s", name, after[name])
				}
			}
			if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil || changed {
				t.Fatalf("a second Install: %v, changed %v", err, changed)
			}
		})
	}
}

func setOf(keys []string) map[string]string {
	m := map[string]string{}
	for _, k := range keys {
		m[k] = ""
	}
	return m
}

// TestInstallListFollowsThePluginsConf: ovnkube-node writes its .conf at
// every start, the same or not; netshift's list follows what it holds (not
// when it was written) within one Install, and leaves the .conf as written.
func TestInstallListFollowsThePluginsConf(t *testing.T) {
	for _, pool := range []*PoolConfig{nil, testPool} {
		n := newTestNode(t, map[string]string{"10-ovn-kubernetes.conf": ovnConf})
		if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil {
			t.Fatal(err)
		}
		n.write(t, "10-ovn-kubernetes.conf", ovnConf)
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(filepath.Join(n.conf, "10-ovn-kubernetes.conf"), later, later); err != nil {
			t.Fatal(err)
		}
		if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil || changed {
			t.Fatalf("Install after the same .conf was written again: %v, changed %v", err, changed)
		}
		rewritten := strings.Replace(ovnConf, `"logLevel":"4"`, `"logLevel":"5"`, 1)
		n.write(t, "10-ovn-kubernetes.conf", rewritten)
		if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil || !changed {
			t.Fatalf("Install after the rewrite: %v, changed %v", err, changed)
		}
		l := runtimeLoads(t, n.conf)
		if got := files(t, n.conf); names(got) != "10-ovn-kubernetes-netshift.conflist 10-ovn-kubernetes.conf" || got["10-ovn-kubernetes.conf"] != rewritten {
			t.Fatalf("the directory holds %s, the .conf %s", names(got), got["10-ovn-kubernetes.conf"])
		}
		if l.File != "10-ovn-kubernetes-netshift.conflist" || l.Types[len(l.Types)-1] != PluginName {
			t.Fatalf("the runtime loads %s %v", l.File, l.Types)
		}
		if got := l.networkPlugin(t); !sameJSON(t, got, rewritten) {
			t.Fatalf("the network plugin's entry %s, want the rewritten %s", got, rewritten)
		}
		if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil || changed {
			t.Fatalf("a second Install: %v, changed %v", err, changed)
		}
	}
}

// TestInstallKeepsWhatAnotherChainingPluginAdded: a plugin that chains
// itself into the file the runtime uses, as netshift does, may add its entry
// to netshift's list; netshift keeps it, through a rewrite of the .conf too,
// so that neither undoes the other's write in turn.
func TestInstallKeepsWhatAnotherChainingPluginAdded(t *testing.T) {
	n := newTestNode(t, map[string]string{"10-ovn-kubernetes.conf": ovnConf})
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	n.chainAnother(t, "10-ovn-kubernetes-netshift.conflist")
	// netshift-cni is put back last, as in any list; the other plugin finds its entry there.
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil || changed {
		t.Fatalf("a second Install after another plugin chained itself: %v, changed %v", err, changed)
	}
	n.write(t, "10-ovn-kubernetes.conf", strings.Replace(ovnConf, `"logLevel":"4"`, `"logLevel":"5"`, 1))
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	if l := runtimeLoads(t, n.conf); strings.Join(l.Types, ",") != "ovn-k8s-cni-overlay,istio-cni,netshift-cni" || l.Plugins[0]["logLevel"] != "5" {
		t.Fatalf("the runtime loads %s %v: %v", l.File, l.Types, l.Plugins[0])
	}
}

// chainAnother appends another chaining plugin's entry to a list, as
// istio-cni does to the file the runtime uses.
func (n testNode) chainAnother(t *testing.T, list string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.conf, list))
	if err != nil {
		t.Fatal(err)
	}
	var l map[string]any
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	l["plugins"] = append(l["plugins"].([]any), map[string]any{"type": "istio-cni"})
	added, _ := json.Marshal(l)
	n.write(t, list, string(added))
}

// TestInstallRemovesItsListWhenTheConfGoes: a plugin that takes its .conf
// away (uninstalled, or being reinstalled) takes its network away; netshift's
// list of it goes too, and the runtime's next file is chained instead.
func TestInstallRemovesItsListWhenTheConfGoes(t *testing.T) {
	n := newTestNode(t, map[string]string{"10-ovn-kubernetes.conf": ovnConf})
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(n.conf, "10-ovn-kubernetes.conf")); err != nil {
		t.Fatal(err)
	}
	if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err == nil || !strings.Contains(err.Error(), "no CNI configuration in") || !changed {
		t.Fatalf("Install after the .conf went: %v, changed %v", err, changed)
	}
	if got := names(files(t, n.conf)); got != "" {
		t.Fatalf("the directory holds %s", got)
	}
	n.write(t, "10-ovn-kubernetes.conf", ovnConf)
	n.write(t, "20-pods.conflist", mainList)
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(n.conf, "10-ovn-kubernetes.conf")); err != nil {
		t.Fatal(err)
	}
	if changed, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil || !changed {
		t.Fatalf("Install after the .conf went: %v, changed %v", err, changed)
	}
	if l := runtimeLoads(t, n.conf); l.File != "20-pods.conflist" || l.Types[len(l.Types)-1] != PluginName || names(files(t, n.conf)) != "20-pods.conflist" {
		t.Fatalf("the runtime loads %s %v, of %s", l.File, l.Types, names(files(t, n.conf)))
	}
}

// TestInstallRefusesBadConfiguration: a configuration the runtime could not
// load, or that netshift cannot chain into without harm, is named and left
// as it is, and netshift-cni is not installed.
func TestInstallRefusesBadConfiguration(t *testing.T) {
	onlyNetshift := `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"netshift-cni","networkConfig":"/n.json"}]}`
	ours := netshiftsList(ovnConf, "10-ovn-kubernetes.conf")
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no configuration yet", map[string]string{"README": "r", "10-ovn-kubernetes.conf/": ""}, "no CNI configuration in"},
		{"a .conf that is not JSON", map[string]string{"10-ovn-kubernetes.conf": `{"cniVersion":`}, "10-ovn-kubernetes.conf: not a CNI configuration"},
		{"a .conf with no type", map[string]string{"10-ovn-kubernetes.conf": `{"cniVersion":"0.4.0","name":"ovn-kubernetes"}`}, "10-ovn-kubernetes.conf: not a CNI configuration: error parsing configuration: missing 'type'"},
		{"a .conf of netshift-cni", map[string]string{"10-x.conf": `{"cniVersion":"0.4.0","name":"x","type":"netshift-cni"}`}, "10-x.conf: its type is netshift-cni"},
		{"a list in a .json", map[string]string{"10-pods.json": mainList}, "10-pods.json: a configuration list in a file the runtime reads as one plugin's configuration"},
		{"a list with no plugins", map[string]string{"10-pods.conflist": `{"cniVersion":"1.0.0","name":"pods","plugins":[]}`}, "10-pods.conflist: not a CNI configuration list: error parsing configuration list: no plugins in list"},
		{"a list with no name", map[string]string{"10-pods.conflist": `{"cniVersion":"1.0.0","plugins":[{"type":"bridge"}]}`}, "10-pods.conflist: not a CNI configuration list: error parsing configuration list: no name"},
		{"a list with a plugin with no type", map[string]string{"10-pods.conflist": `{"name":"pods","plugins":[{"bridge":"cni0"}]}`}, "10-pods.conflist: not a CNI configuration list"},
		{"a list of netshift-cni only", map[string]string{"10-pods.conflist": onlyNetshift}, "10-pods.conflist: not a CNI configuration list: only netshift-cni in it"},
		{"a file between netshift's list and its .conf", map[string]string{"10-ovn-kubernetes-netshift.conflist": ours, "10-ovn-kubernetes.conf": ovnConf, "10-ovn-kubernetes-old.conf": bridgeConf},
			"10-ovn-kubernetes.conf: netshift's list of it, 10-ovn-kubernetes-netshift.conflist, would be loaded instead of 10-ovn-kubernetes-old.conf, which the runtime loads without netshift"},
		{"netshift's list, the .conf rewritten unloadable", map[string]string{"10-ovn-kubernetes-netshift.conflist": ours, "10-ovn-kubernetes.conf": `{"cniVersion":`},
			"10-ovn-kubernetes.conf: not a CNI configuration"},
		{"netshift's list named after another file", map[string]string{"10-ovn-kubernetes-netshift.conflist": netshiftsList(multusConf, "00-multus.conf"), "10-ovn-kubernetes.conf": ovnConf},
			"10-ovn-kubernetes-netshift.conflist: netshift.io/converted-from 00-multus.conf: netshift names its list of that file 00-multus-netshift.conflist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, tc.files)
			before := files(t, n.conf)
			_, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Install: %v, want %q", err, tc.want)
			}
			if after := files(t, n.conf); !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused Install changed the directory: %v", after)
			}
			if _, err := os.Stat(filepath.Join(n.bin, PluginName)); err == nil {
				t.Fatal("a refused Install installed netshift-cni")
			}
		})
	}
}
