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
