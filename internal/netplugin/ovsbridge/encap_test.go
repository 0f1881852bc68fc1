package ovsbridge

import (
	"reflect"
	"testing"

	"netshift.io/netshift/internal/ovs"
)

func TestEncapsToFix(t *testing.T) {
	records := []ovs.Encap{{UUID: "c", DstPort: 6082}, {UUID: "a"}, {UUID: "b", DstPort: 6081}}
	for _, tc := range []struct {
		port int
		want []string
	}{
		{6081, []string{"b", "c"}},      // no dst_port is the default 6081; a record naming 6081 loses it
		{6082, []string{"a", "b"}},      // a chassis that registered again lost the port
		{7000, []string{"a", "b", "c"}}, // every record
	} {
		if got := EncapsToFix(records, tc.port); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("port %d: fix %v, want %v", tc.port, got, tc.want)
		}
	}
	if got := EncapsToFix(nil, 6081); got != nil {
		t.Errorf("no records: %v", got)
	}
}
