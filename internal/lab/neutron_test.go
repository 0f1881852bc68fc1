package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLastErrorsEndWithTheException(t *testing.T) {
	log := `2026-11-26 06:40:01.100 4198 INFO neutron.wsgi [-] POST /v2.0/ports
2026-11-26 06:40:01.200 4198 ERROR neutron.api.v2.base [req-1] create failed: Traceback (most recent call last):
2026-11-26 06:40:01.200 4198 ERROR neutron.api.v2.base   File "ml2/plugin.py", line 1, in create_port
2026-11-26 06:40:01.200 4198 ERROR neutron.api.v2.base RuntimeError: Port group pg_1 does not exist
2026-11-26 06:40:01.300 4198 INFO neutron.wsgi [-] POST /v2.0/ports status: 500
`
	path := filepath.Join(t.TempDir(), "neutron-server.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(lastErrors(path, 2), "\n")
	if len(got) != 2 || !strings.HasSuffix(got[1], "RuntimeError: Port group pg_1 does not exist") || !strings.Contains(got[0], `File "ml2/plugin.py"`) {
		t.Fatalf("lastErrors: %q, want the traceback's last 2 lines", got)
	}
	if lastErrors(filepath.Join(t.TempDir(), "absent.log"), 5) != "" {
		t.Fatal("a missing log gives nothing")
	}
}
