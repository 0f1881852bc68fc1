package kubenode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteOnceLeavesThePluginsConfiguration: a node's later starts find
// its plugin's file, the .conf netshift keeps beside its list or the
// .conflist netshift chained into, and write nothing.
func TestWriteOnceLeavesThePluginsConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		there map[string]string
	}{
		{"10-lab.conf", map[string]string{"10-lab.conf": "the plugin's", "10-lab-netshift.conflist": "netshift's"}},
		{"10-lab.conflist", map[string]string{"10-lab.conflist": "chained"}},
	} {
		dir := t.TempDir()
		for name, data := range tc.there {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeOnce(dir, tc.name, []byte("new")); err != nil {
			t.Fatal(err)
		}
		for name, want := range tc.there {
			if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != want {
				t.Errorf("%s: %s is %q, want %q", tc.name, name, got, want)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != len(tc.there) {
			t.Errorf("%s: the directory holds %v", tc.name, entries)
		}
	}
	dir := t.TempDir()
	if err := writeOnce(dir, "10-lab.conf", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "10-lab.conf")); string(got) != "first" {
		t.Errorf("a node's first start wrote %q", got)
	}
}
