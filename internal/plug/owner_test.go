package plug

import (
	"strings"
	"testing"
)

func TestCheckOwner(t *testing.T) {
	for _, c := range []struct {
		name      string
		ids       map[string]string
		namespace string
		project   string
		refusal   string // "" when allowed
	}{
		{"recorded for the namespace", map[string]string{NamespaceKey: "vms"}, "vms", "", ""},
		{"recorded for another namespace", map[string]string{NamespaceKey: "other"}, "vms", "p1", `recorded for namespace "other", not "vms"`},
		{"Neutron port of the namespace's project", map[string]string{NeutronProjectKey: "p1"}, "vms", "p1", ""},
		{"Neutron port of another project", map[string]string{NeutronProjectKey: "p2"}, "vms", "p1", "project p2, not of p1"},
		{"Neutron port, namespace without a project", map[string]string{NeutronProjectKey: "p2"}, "vms", "", "maps to no project"},
		{"nobody's port", map[string]string{"foo": "bar"}, "vms", "p1", "records no owner"},
		{"a namespace record wins over a project", map[string]string{NamespaceKey: "other", NeutronProjectKey: "p1"}, "vms", "p1", "recorded for namespace"},
	} {
		err := CheckOwner("port-1", c.ids, c.namespace, c.project)
		switch {
		case c.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)):
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.refusal)
		}
	}
}
