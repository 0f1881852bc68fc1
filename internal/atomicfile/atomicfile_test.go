package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeAndLeavesNothingBeside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := Write(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "two" || st.Mode().Perm() != 0o755 || len(entries) != 1 {
		t.Fatalf("content %q, mode %v, files %v", data, st.Mode(), entries)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Fatal("a file in a missing directory was written")
	}
}
