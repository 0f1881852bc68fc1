package portpool

import (
	"strings"
	"testing"
)

func TestInterfaceOf(t *testing.T) {
	good := Assignment{ID: "p1", MAC: "fa:16:3e:00:00:01", MTU: 1442,
		Addresses: []Address{{CIDR: "fd00::5/64", Gateway: "fd00::1"}, {CIDR: "10.1.0.5/24", Gateway: "10.1.0.1"}}}
	i, err := InterfaceOf(good)
	if err != nil {
		t.Fatal(err)
	}
	// The default route goes through the IPv4 subnet's gateway, whatever the order.
	if i.MAC.String() != good.MAC || len(i.Addresses) != 2 || i.Addresses[1].String() != "10.1.0.5/24" || i.Gateway.String() != "10.1.0.1" || i.MTU != 1442 {
		t.Fatalf("interface %+v", i)
	}
	noGateway := Assignment{ID: "p1", MAC: "fa:16:3e:00:00:01", Addresses: []Address{{CIDR: "10.1.0.5/24"}}}
	if i, err := InterfaceOf(noGateway); err != nil || i.Gateway.IsValid() {
		t.Fatalf("a subnet without a gateway: %+v, %v", i, err)
	}
	for _, c := range []struct {
		a    Assignment
		want string
	}{
		{Assignment{ID: "p1", MAC: "01:16:3e:00:00:01", Addresses: good.Addresses}, `mac "01:16:3e:00:00:01": want a unicast`},
		{Assignment{ID: "p1", MAC: "nope", Addresses: good.Addresses}, `mac "nope"`},
		{Assignment{ID: "p1", MAC: good.MAC}, "has no addresses"},
		{Assignment{ID: "p1", MAC: good.MAC, Addresses: []Address{{CIDR: "10.1.0.5"}}}, `address "10.1.0.5": want an address with its subnet's prefix length`},
		{Assignment{ID: "p1", MAC: good.MAC, Addresses: []Address{{CIDR: "10.1.0.0/24"}}}, `address "10.1.0.0/24"`},
		{Assignment{ID: "p1", MAC: good.MAC, Addresses: []Address{{CIDR: "10.1.0.5/24", Gateway: "10.2.0.1"}}}, `gateway "10.2.0.1" of 10.1.0.5/24: want another address inside 10.1.0.0/24`},
		{Assignment{ID: "p1", MAC: good.MAC, Addresses: []Address{{CIDR: "10.1.0.5/24", Gateway: "10.1.0.5"}}}, `gateway "10.1.0.5"`},
		{Assignment{ID: "p1", MAC: good.MAC, Addresses: good.Addresses, MTU: 100}, "mtu 100: want 576..9216"},
		{Assignment{ID: "p1", MAC: good.MAC, Addresses: good.Addresses, SegmentationID: 4095}, "segmentationID 4095: want 0 (no subport) or 1..4094"},
	} {
		if _, err := InterfaceOf(c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("InterfaceOf(%+v) = %v, want an error with %q", c.a, err, c.want)
		}
	}
}

func TestParseAssignment(t *testing.T) {
	a, err := ParseAssignment(`{"id":"p1","mac":"fa:16:3e:00:00:01","addresses":[{"cidr":"10.1.0.5/24","gateway":"10.1.0.1"}],"pool":"k"}`)
	if err != nil || a.ID != "p1" || a.Addresses[0].Gateway != "10.1.0.1" {
		t.Fatalf("%+v, %v", a, err)
	}
	for _, bad := range []string{``, `{}`, `{"mac":"x"}`, `[1]`} {
		if _, err := ParseAssignment(bad); err == nil {
			t.Errorf("ParseAssignment(%q) accepted", bad)
		}
	}
}

// FuzzInterfaceOf: whatever an ownership record holds, checking it never
// panics, and what it accepts is a unicast MAC, prefixes and a gateway
// inside one of them.
func FuzzInterfaceOf(f *testing.F) {
	f.Add(`{"id":"p1","mac":"fa:16:3e:00:00:01","addresses":[{"cidr":"10.1.0.5/24","gateway":"10.1.0.1"}]}`)
	f.Add(`{"id":"p1","mac":"fa:16:3e:00:00:01","addresses":[{"cidr":"fd00::5/64","gateway":"fd00::1"}],"mtu":1500,"segmentationID":7}`)
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := ParseAssignment(raw)
		if err != nil {
			return
		}
		i, err := InterfaceOf(a)
		if err != nil {
			return
		}
		if i.MAC[0]&1 == 1 || len(i.Addresses) == 0 {
			t.Fatalf("accepted %s as %+v", raw, i)
		}
		if i.Gateway.IsValid() {
			inside := false
			for _, p := range i.Addresses {
				inside = inside || p.Masked().Contains(i.Gateway)
			}
			if !inside {
				t.Fatalf("accepted %s with gateway %s outside every address", raw, i.Gateway)
			}
		}
	})
}
