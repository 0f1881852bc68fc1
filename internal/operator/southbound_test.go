package operator

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseEncaps(t *testing.T) {
	out := `{"data":[[["uuid","b2"],["map",[["csum","true"],["dst_port","6082"]]]],[["uuid","a1"],["map",[]]]],"headings":["_uuid","options"]}`
	got, err := parseEncaps([]byte(out))
	want := []encapRecord{{UUID: "b2", DstPort: 6082}, {UUID: "a1"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseEncaps = %+v, %v; want %+v", got, err, want)
	}
	bad := `{"data":[[["uuid","c3"],["map",[["dst_port","x"]]]]],"headings":["_uuid","options"]}`
	if _, err := parseEncaps([]byte(bad)); err == nil || !strings.Contains(err.Error(), `Encap c3: options:dst_port "x"`) {
		t.Fatalf("a bad port: %v", err)
	}
	if _, err := parseEncaps([]byte("ovn-sbctl: no")); err == nil {
		t.Fatal("garbage read without error")
	}
}

func TestEncapsToFix(t *testing.T) {
	records := []encapRecord{{UUID: "c", DstPort: 6082}, {UUID: "a"}, {UUID: "b", DstPort: 6081}}
	for _, tc := range []struct {
		port int
		want []string
	}{
		{6081, []string{"c"}},           // no dst_port is the default 6081
		{6082, []string{"a", "b"}},      // a chassis that registered again lost the port
		{7000, []string{"a", "b", "c"}}, // every record
	} {
		if got := encapsToFix(records, tc.port); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("port %d: fix %v, want %v", tc.port, got, tc.want)
		}
	}
	if got := encapsToFix(nil, 6081); got != nil {
		t.Errorf("no records: %v", got)
	}
}
