package cni

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if _, err := Install(conf, bin, plugin, "/n.json", nil); err == nil || !strings.Contains(err.Error(), "no CNI configuration list in") {
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
