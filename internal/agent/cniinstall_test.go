package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCNIInstallPutsItselfBackAtOnce: a network plugin that rewrites its
// configuration list drops netshift-cni from it; the agent chains it again
// within moments, long before its period (an hour here) comes round.
func TestCNIInstallPutsItselfBackAtOnce(t *testing.T) {
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
