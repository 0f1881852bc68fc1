package plug

import "fmt"

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

// TapInUse is what the node's switch already holds under a port's tap name.
type TapInUse struct {
	// Exists is whether the switch has an interface of that name.
	Exists bool
	// PortID is the netshift port it was plugged for ("" when netshift did not plug it).
	PortID string
	// Type is the interface's OVS type ("" for a system device, internal for a bridge's own).
	Type string
}

// CheckTap refuses a tap name that is already a device of the node's switch
// and not one netshift plugged for this port: a bridge (its internal
// interface), a tunnel, the node's uplink, another port's tap. Plugging it
// would move the node's own device into a port bridge, and unplugging it
// would delete it.
func CheckTap(p Port, used TapInUse) error {
	if !used.Exists || used.PortID == p.ID {
		return nil
	}
	what := "a device of the node's switch"
	switch {
	case used.PortID != "":
		what = "the tap of port " + used.PortID
	case used.Type == "internal":
		what = "a bridge of the node's switch"
	case used.Type != "" && used.Type != "system":
		what = "a " + used.Type + " interface of the node's switch"
	}
	return fmt.Errorf("port %s: tap: %q is already %s; a tap must be a device created for this port, or not exist yet", p.ID, p.Tap, what)
}
