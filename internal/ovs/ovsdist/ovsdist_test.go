package ovsdist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindReadsTheVersionsAndNamesTheFiles(t *testing.T) {
	root := t.TempDir()
	t.Setenv("NETSHIFT_OVS_ROOT", root)
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "run hack/setup.sh") || !strings.Contains(err.Error(), root) {
		t.Fatalf("nothing unpacked: %v, want an error naming %s and hack/setup.sh", err, root)
	}
	if err := os.WriteFile(filepath.Join(root, "VERSION"), []byte("openvswitch-switch 3.5.0-1+b1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "ovn-host") {
		t.Fatalf("no OVN version: %v, want an error", err)
	}
	if err := os.WriteFile(filepath.Join(root, "VERSION"), []byte("openvswitch-switch 3.5.0-1+b1\novn-host 25.03.0-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Find()
	if err != nil || d.OVS != "3.5.0-1+b1" || d.OVN != "25.03.0-1" || d.Root != root {
		t.Fatalf("Find: %+v, %v", d, err)
	}
	for name, want := range map[string]string{
		"vswitch":   root + "/usr/share/openvswitch/vswitch.ovsschema",
		"ovn-sb":    root + "/usr/share/ovn/ovn-sb.ovsschema",
		"ovn-ic-nb": root + "/usr/share/ovn/ovn-ic-nb.ovsschema",
	} {
		if got := d.Schema(name); got != want {
			t.Errorf("Schema(%q) = %s, want %s", name, got, want)
		}
	}
	env := strings.Join(d.Env("/usr/bin:/bin"), " ")
	if !strings.Contains(env, "PATH="+root+"/bin:/usr/bin:/bin") || !strings.Contains(env, "OVN_PKGDATADIR="+root+"/usr/share/ovn") {
		t.Errorf("Env: %s", env)
	}
	if again := strings.Join(d.Env(root+"/bin:/usr/bin"), " "); !strings.Contains(again, "PATH="+root+"/bin:/usr/bin ") {
		t.Errorf("Env with Bin on PATH already: %s, want it once", again)
	}
}
