package nodeconfig

import (
	"encoding/json"
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

// FuzzParse: the node's network configuration file (which new pods are set
// up from) never panics the parser, a file it accepts has values a node can
// use, and what it accepts survives a write and a read unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mtu":1450,"encapsulation":"vxlan","tunnelPort":4789}`))
	f.Add([]byte(`{"mtu":1400,"encapsulation":"geneve","tunnelPort":6081,"change":"mtu-1"}`))
	f.Add([]byte(`{"mtu":0,"encapsulation":"gre","tunnelPort":70000}`))
	f.Add([]byte(`{"mtu":1e9}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if c.MTU < 576 || c.MTU > 9216 || c.TunnelPort < 1 || c.TunnelPort > 65535 ||
			(c.Encapsulation != v1alpha1.EncapVXLAN && c.Encapsulation != v1alpha1.EncapGeneve) {
			t.Fatalf("accepted %s as %+v", data, c)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil || back != c {
			t.Fatalf("%+v does not read back: %+v, %v", c, back, err)
		}
	})
}
