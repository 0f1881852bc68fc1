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

func TestCheckTap(t *testing.T) {
	p := Port{ID: "p1", MAC: "0a:58:c6:12:fa:0a", Tap: "tapp1"}
	for _, c := range []struct {
		used    TapInUse
		refusal string
	}{
		{TapInUse{}, ""}, // not there yet: vswitchd attaches it when it appears
		{TapInUse{InSwitch: true, PortID: "p1", Device: true, Kind: "veth", Master: "ovs-system"}, ""}, // plugged before: again
		{TapInUse{InSwitch: true, PortID: "p2"}, "the tap of port p2"},
		{TapInUse{InSwitch: true, Type: "internal"}, "a bridge of the node's switch"},
		{TapInUse{InSwitch: true, Type: "vxlan"}, "a vxlan interface"},
		{TapInUse{InSwitch: true, Device: true, Kind: "device"}, "a device of the node's switch"}, // the uplink in br-phy
		{TapInUse{Device: true, Kind: "tuntap"}, ""},                                              // the VM's tap, made by its hypervisor
		{TapInUse{Device: true, Kind: "veth"}, ""},                                                // a pod's or a VM's veth
		{TapInUse{Device: true, Kind: "device", Addresses: []string{"10.0.0.4/24"}}, "a hardware device of the node"},
		{TapInUse{Device: true, Kind: "veth", Addresses: []string{"10.0.0.4/24"}}, "with address 10.0.0.4/24"}, // a lab node's uplink
		{TapInUse{Device: true, Kind: "veth", Master: "cni0"}, "enslaved to cni0"},
		{TapInUse{Device: true, Kind: "bridge"}, "a bridge device of the node"},
		{TapInUse{Device: true, Kind: "dummy"}, "a dummy device"},
	} {
		err := CheckTap(p, c.used)
		if c.refusal == "" && err != nil || c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)) {
			t.Errorf("%+v: %v, want %q", c.used, err, c.refusal)
		}
	}
}
