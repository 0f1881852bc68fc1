package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/nodeconfig"
)

// TestUninstallKeepsNetshiftOff: once the agent took netshift off the node,
// netshift-cni stays off though the network plugin rewrites its list (which
// would have it chained again at once) and the agent keeps running; its
// files are gone; a withdrawn uninstall puts it back.
func TestUninstallKeepsNetshiftOff(t *testing.T) {
	dir, conf, bin, plugin := nodeCNIDirs(t)
	list := filepath.Join(conf, "10-pods.conflist")
	const plain = `{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"ovn-k8s-cni-overlay","mtu":1400}]}`
	if err := os.WriteFile(list, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	networkConfig := filepath.Join(dir, "network.json")
	if err := os.WriteFile(networkConfig, []byte(`{"mtu":1400,"encapsulation":"geneve","tunnelPort":6081}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodeconfig.LockPath(networkConfig), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gate := &offGate{}
	install := CNIInstall{Plugin: plugin, ConfDir: conf, BinDir: bin, NetworkConfig: networkConfig, Every: time.Hour, gate: gate}
	a := &Agent{Node: "worker-3", NetworkConfig: networkConfig, cni: &install, gate: gate}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- install.Start(ctx) }()
	chained := func() bool {
		data, _ := os.ReadFile(list)
		return strings.Contains(string(data), `"`+cni.PluginName+`"`)
	}
	waitUntil(t, "netshift-cni chained", chained)

	var removed []string
	if err := gate.takeOff(func() error { var err error; removed, err = a.removeNetshift(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(removed) != 3 {
		t.Errorf("removed %q: want netshift-cni, the configuration and its lock", removed)
	}
	for _, f := range []string{filepath.Join(bin, cni.PluginName), networkConfig, nodeconfig.LockPath(networkConfig)} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left after uninstall (%v)", f, err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if err := os.WriteFile(list, []byte(plain), 0o644); err != nil { // the plugin rewrites its list
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a keeping agent chains again within milliseconds
	if chained() {
		t.Fatal("netshift-cni chained again after the uninstall")
	}
	if _, err := a.alignNow(ctx); err != nil || fileExists(nodeconfig.LockPath(networkConfig)) {
		t.Errorf("the pods' alignment after the uninstall: %v; lock made again: %v", err, fileExists(nodeconfig.LockPath(networkConfig)))
	}

	// Withdrawn: the writers are let in again, and the next look chains it.
	if !gate.putBack() {
		t.Fatal("the gate did not know netshift was off")
	}
	if err := os.WriteFile(list, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "netshift-cni chained again once the uninstall was withdrawn", chained)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 5 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
