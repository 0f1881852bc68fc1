package nodeconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

func TestWriteThenRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etc", "network.json")
	want := File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{MTU: 1350, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4790}, Change: "mtu-2-1"}
	if err := Write(path, File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{MTU: 1450, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil || got != want {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("files left beside the configuration: %v", entries)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), `"mtu": 1350`) {
		t.Fatalf("file content %s", data)
	}
}

func TestReadRefusesBadContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "network.json")
	for content, want := range map[string]string{
		`{"mtu": 100, "encapsulation": "vxlan", "tunnelPort": 4789}`:  "mtu 100 (want 576..9216)",
		`{"mtu": 1400, "encapsulation": "gre", "tunnelPort": 4789}`:   `encapsulation "gre"`,
		`{"mtu": 1400, "encapsulation": "vxlan", "tunnelPort": 0}`:    "tunnelPort 0 (want 1..65535)",
		`{"mtu": 9300, "encapsulation": "vxlan", "tunnelPort": 4789}`: "mtu 9300 (want 576..9216)",
		`{"mtu": `: path,
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want an error naming %q", content, err, want)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file read without error")
	}
}

func TestExclusiveLockWaitsForSharedHolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "network.json")
	ctx := context.Background()
	a, err := LockShared(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LockShared(ctx, path)
	if err != nil {
		t.Fatalf("a second shared holder must not wait: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if l, err := LockExclusive(short, path); err == nil {
		l.Unlock()
		t.Fatal("the exclusive lock was granted while shared holders hold it")
	} else if !strings.Contains(err.Error(), LockPath(path)) {
		t.Fatalf("error does not name the lock file: %v", err)
	}
	a.Unlock()
	b.Unlock()
	x, err := LockExclusive(ctx, path)
	if err != nil {
		t.Fatalf("exclusive after the shared holders left: %v", err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if _, err := LockShared(short2, path); err == nil {
		t.Fatal("a shared holder got in during the exclusive hold")
	}
	x.Unlock()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("locking created the configuration itself: %v", err)
	}
}
