package plug

import (
	"fmt"
	"strings"
)

// The logical switch port's external_ids that say whose a port is: Neutron's
// ML2/OVN records the port's project; netshift (and whatever creates logical
// ports for a namespace, as the lab does for its VMs) records the namespace.
const (
	NamespaceKey      = "netshift.io/namespace"
	NeutronProjectKey = "neutron:project_id"
)

// CheckOwner decides whether a pod of namespace may have the logical port
// whose external_ids are ids bound to its chassis: the port must be recorded
// for that namespace, or be a Neutron port of the project mapped to it
// (project, "" when the namespace maps none). Anything else is another
// tenant's port, or nobody's: binding it would hand a port to a pod that
// named it.
func CheckOwner(port string, ids map[string]string, namespace, project string) error {
	if ns, ok := ids[NamespaceKey]; ok {
		if ns == namespace {
			return nil
		}
		return fmt.Errorf("port %s is recorded for namespace %q, not %q", port, ns, namespace)
	}
	if p, ok := ids[NeutronProjectKey]; ok {
		if project != "" && p == project {
			return nil
		}
		if project == "" {
			return fmt.Errorf("port %s is a Neutron port of project %s, and namespace %q maps to no project", port, p, namespace)
		}
		return fmt.Errorf("port %s is a Neutron port of project %s, not of %s (namespace %q's)", port, p, project, namespace)
	}
	return fmt.Errorf("port %s records no owner (external_ids %s or %s)", port, NamespaceKey, NeutronProjectKey)
}

// TapInUse is what a node already has under a port's tap name: in its
// switch, and as a device of its network namespace.
type TapInUse struct {
	// InSwitch is whether the switch has an interface of that name.
	InSwitch bool
	// PortID is the netshift port it was plugged for ("" when netshift did not plug it).
	PortID string
	// Type is the interface's OVS type ("" for a system device, internal for a bridge's own).
	Type string

	// Device is whether the node has a network device of that name.
	Device bool
	// Kind is the device's link type ("tuntap", "veth", "device", "bridge", ...).
	Kind string
	// Master is the device it is enslaved to, "" for none.
	Master string
	// Addresses are its IP addresses (link-local ones left out).
	Addresses []string
}

// tapKinds are the devices a hypervisor or a CNI plugin creates for one port.
var tapKinds = map[string]bool{"tuntap": true, "tun": true, "tap": true, "veth": true}

// CheckTap refuses a tap name that is something of the node's other than a
// device created for this port: a bridge (its internal interface), a tunnel
// or another port's tap in the switch; outside it, the node's uplink or any
// device that carries an address, is enslaved, or is not a tap or veth.
// Plugging such a name would move the node's own device into a port bridge,
// and unplugging it would delete it.
func CheckTap(p Port, used TapInUse) error {
	refuse := func(what string) error {
		return fmt.Errorf("port %s: tap: %q is already %s; a tap must be a device created for this port "+
			"(a tap or veth with no address), or not exist yet", p.ID, p.Tap, what)
	}
	if used.InSwitch {
		switch {
		case used.PortID == p.ID:
			return nil // plugged before for this port: plugging again repairs it
		case used.PortID != "":
			return refuse("the tap of port " + used.PortID)
		case used.Type == "internal":
			return refuse("a bridge of the node's switch")
		case used.Type != "" && used.Type != "system":
			return refuse("a " + used.Type + " interface of the node's switch")
		}
		return refuse("a device of the node's switch")
	}
	switch {
	case !used.Device:
		return nil
	case used.Master != "":
		return refuse(fmt.Sprintf("a device of the node enslaved to %s", used.Master))
	case used.Kind == "device":
		return refuse("a hardware device of the node")
	case !tapKinds[used.Kind]:
		return refuse(fmt.Sprintf("a %s device of the node", used.Kind))
	case len(used.Addresses) > 0:
		return refuse(fmt.Sprintf("a device of the node with address %s", strings.Join(used.Addresses, ", ")))
	}
	return nil
}
