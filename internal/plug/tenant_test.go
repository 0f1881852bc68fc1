package plug

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNamespacePortsOfNamesTheFieldAndRange(t *testing.T) {
	opted := map[string]string{PortSpecOptInLabel: PortSpecEnabled}
	for _, c := range []struct {
		name        string
		annotations map[string]string
		want        string // "" when valid
	}{
		{"no annotations", nil, ""},
		{"ids and prefixes", map[string]string{PortIDsAnnotation: "a-1, vms_vm-*,b.2", MaxPortsAnnotation: "3"}, ""},
		{"limit zero", map[string]string{MaxPortsAnnotation: "0"}, MaxPortsAnnotation + `: "0" is not a whole number from 1 to 256`},
		{"limit too high", map[string]string{MaxPortsAnnotation: "257"}, "from 1 to 256"},
		{"limit not a number", map[string]string{MaxPortsAnnotation: "lots"}, `"lots" is not a whole number`},
		{"an id with a space", map[string]string{PortIDsAnnotation: "a b"}, PortIDsAnnotation + `: "a b" is neither a port ID nor a prefix`},
		{"a bare star", map[string]string{PortIDsAnnotation: "*"}, "neither a port ID nor a prefix"},
		{"too many entries", map[string]string{PortIDsAnnotation: strings.Repeat("a,", 300)}, "301 entries, at most 256"},
	} {
		_, err := NamespacePortsOf("vms", opted, c.annotations)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "namespace vms annotation")):
			t.Errorf("%s: error %v, want one naming the namespace's annotation and %q", c.name, err, c.want)
		}
	}
}

func TestNamespaceAllows(t *testing.T) {
	own := "vms_vm-1"
	p := Port{ID: own, MAC: "0a:58:c6:12:fa:0a"}.WithDefaults("u")
	ports := func(n int) []Plugged {
		var pl []Plugged
		for i := range n {
			id := "vms_vm-x" + string(rune('a'+i))
			pl = append(pl, Plugged{PortID: id, Mode: PerPort, Owner: "vms/p" + id, Tap: DefaultTap(id)})
		}
		return pl
	}
	np, err := NamespacePortsOf("vms", map[string]string{PortSpecOptInLabel: PortSpecEnabled},
		map[string]string{PortIDsAnnotation: "vms_vm-*,solo", MaxPortsAnnotation: "2"})
	if err != nil {
		t.Fatal(err)
	}
	notOpted, _ := NamespacePortsOf("vms", map[string]string{PortSpecOptInLabel: "yes"}, map[string]string{PortIDsAnnotation: "vms_vm-*"})
	for _, c := range []struct {
		name    string
		np      NamespacePorts
		port    Port
		plugged []Plugged
		want    string
	}{
		{"its own port", np, p, nil, ""},
		{"an exact id", np, Port{ID: "solo"}, nil, ""},
		{"not opted in (any other label value)", notOpted, p, nil, "not opted in"},
		{"another namespace's port", np, Port{ID: "victim-port-1"}, nil, "not a port of namespace vms"},
		{"a prefix of an exact id is not the id", np, Port{ID: "sol"}, nil, "not a port of namespace vms"},
		{"within the limit", np, p, ports(1), ""},
		{"at the limit", np, p, ports(2), "has 2 ports plugged on this node"},
		{"its own plug does not count", np, p, append(ports(1), Plugged{PortID: own, Owner: "vms/a", Mode: PerPort}), ""},
		{"the pod's earlier port does not count (it goes as this one comes)", np, p, append(ports(1), Plugged{PortID: "vms_vm-old", Owner: "vms/me", Mode: PerPort}), ""},
		{"parked and other namespaces' ports do not count", np, p,
			[]Plugged{{PortID: "x", Owner: "other/a"}, {PortID: "y", Owner: "other/b"}, {PortID: "vms_vm-z", ParkedAt: time.Unix(1, 0)}}, ""},
	} {
		err := c.np.Allow(c.port, "vms/me", c.plugged)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		case errors.Is(err, ErrAtLimit) != strings.Contains(c.want, "plugged on this node"):
			t.Errorf("%s: error %v: only the limit is a refusal for now", c.name, err)
		}
	}
}

// TestMessagesQuoteInputBounded: a 120 KB port ID or MAC is cut in the
// message that quotes it.
func TestMessagesQuoteInputBounded(t *testing.T) {
	huge := strings.Repeat("a", 120<<10)
	for _, err := range []error{
		Port{ID: huge + " ", MAC: "0a:58:c6:12:fa:0a"}.Validate(),
		Port{ID: "a", MAC: huge}.Validate(),
		Port{ID: "a", MAC: "0a:58:c6:12:fa:0a", Tap: huge}.Validate(),
		func() error { _, err := ParseMode("node annotation", huge); return err }(),
		func() error {
			_, err := NamespacePortsOf("vms", map[string]string{PortSpecOptInLabel: PortSpecEnabled}, map[string]string{PortIDsAnnotation: huge + " x"})
			return err
		}(),
	} {
		if err == nil {
			t.Error("a huge value was accepted")
			continue
		}
		if len(err.Error()) > 400 || !cutMark.MatchString(err.Error()) {
			t.Errorf("message of %d bytes, want at most 400 saying how much was cut: %.200s", len(err.Error()), err)
		}
	}
}

var cutMark = regexp.MustCompile(`\.\.\. \(12288[0-2] bytes\)`)

func TestMayShareNames(t *testing.T) {
	np, err := NamespacePortsOf("a", map[string]string{PortSpecOptInLabel: PortSpecEnabled},
		map[string]string{PortIDsAnnotation: "ab-*,exact-id-0001,netshift-tenant-a-*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id    string
		entry string // "" when no port of namespace a can have the same names
	}{
		{"abc123", "ab-*"},               // a's ab-c123 is tapabc123 too
		{"a", ""},                        // shorter than any of a's ports' names
		{"xyz-1", ""},                    // nothing in common
		{"exactid0001", "exact-id-0001"}, // the same names once dashes go
		{"exactid0002", ""},              // differs within the first 11
		{"netshift-tenant-b-1", "netshift-tenant-a-*"}, // the first 11 are netshiftten for both
		{"3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9012", ""},
	} {
		entry, shared := np.MayShareNames(c.id)
		if shared != (c.entry != "") || entry != c.entry {
			t.Errorf("%s: shared %v by %q, want %q", c.id, shared, entry, c.entry)
		}
	}
}
