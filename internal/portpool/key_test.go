package portpool

import (
	"strings"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	k, err := NewKey("p1", "net1", "worker-1", "", []string{"sg-b", "sg-a", "sg-b", " "})
	if err != nil {
		t.Fatal(err)
	}
	if k.SecurityGroups != "sg-a,sg-b" || k.String() != "p1/net1/host=worker-1/sg-a,sg-b" {
		t.Fatalf("key %+v = %s: groups sorted and unique", k, k)
	}
	back, err := ParseKey(k.String())
	if err != nil || back != k {
		t.Fatalf("ParseKey(%s) = %+v, %v", k, back, err)
	}
	trunk, err := ParseKey("p1/net1/trunk=port-9/")
	if err != nil || trunk.Trunk != "port-9" || len(trunk.Groups()) != 0 {
		t.Fatalf("trunk key %+v, %v", trunk, err)
	}
}

func TestKeyRefused(t *testing.T) {
	for in, want := range map[string]string{
		"p1/net1/host=/sg":           "exactly one of host",
		"/net1/host=a/sg":            "project: required",
		"p1//host=a/sg":              "network: required",
		"p1/net1/worker-1/sg":        `third part "worker-1"`,
		"p1/net1/host=a":             "want project/network/host=NODE",
		"p1/net1/host=a/trunk=b/sgs": "want project/network/host=NODE",
	} {
		if _, err := ParseKey(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKey(%q) = %v, want an error with %q", in, err, want)
		}
	}
	if err := (Key{Project: "p", Network: "n", Host: "h", SecurityGroups: "b,a"}).Validate(); err == nil || !strings.Contains(err.Error(), "sorted") {
		t.Errorf("unsorted groups: %v", err)
	}
	if _, err := NewKey("p", "n", "h", "t", nil); err == nil {
		t.Error("host and trunk together accepted")
	}
}
