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
	out, changed, err := Chain([]byte(mainList), "/var/lib/netshift/network.json")
	if err != nil || !changed {
		t.Fatalf("Chain: %v, changed %v", err, changed)
	}
	if got := strings.Join(pluginTypes(t, out), ","); got != "ovn-k8s-cni-overlay,portmap,netshift-cni" {
		t.Fatalf("plugins %s", got)
	}
	if !strings.Contains(string(out), `"mtu": 1400`) || !strings.Contains(string(out), `"name": "pods"`) {
		t.Fatalf("the network plugin's settings were lost: %s", out)
	}
	again, changed, err := Chain(out, "/var/lib/netshift/network.json")
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("chaining twice changed the list: %v %v", err, changed)
	}
	moved, changed, _ := Chain(out, "/etc/netshift/network.json")
	if !changed || strings.Count(string(moved), "netshift-cni") != 1 || !strings.Contains(string(moved), "/etc/netshift/network.json") {
		t.Fatalf("a new configuration path: %s", moved)
	}
	for _, bad := range []string{`{`, `{"plugins":[]}`, `{"type":"bridge"}`} {
		if _, _, err := Chain([]byte(bad), "x"); err == nil {
			t.Errorf("Chain(%s) accepted", bad)
		}
	}
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
	if _, err := Install(conf, bin, plugin, "/n.json"); err == nil || !strings.Contains(err.Error(), "no CNI configuration list in") {
		t.Fatalf("before the network plugin wrote its list: %v", err)
	}
	if err := os.WriteFile(filepath.Join(conf, "10-pods.conflist"), []byte(mainList), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := Install(conf, bin, plugin, "/n.json"); err != nil || !changed {
		t.Fatalf("Install: %v, changed %v", err, changed)
	}
	if changed, err := Install(conf, bin, plugin, "/n.json"); err != nil || changed {
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
