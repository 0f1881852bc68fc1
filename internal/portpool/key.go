package portpool

import (
	"fmt"
	"slices"
	"strings"
)

// Key identifies a pool: ports of one project on one network, bound to one
// host (or subports of one trunk, for pods in VMs), with one set of security
// groups. A pod's port must come from the pool of exactly its key.
type Key struct {
	Project string `json:"project"`
	Network string `json:"network"`
	// Host is the node the ports are bound to (binding:host_id); empty for a trunk pool.
	Host string `json:"host,omitempty"`
	// Trunk is the trunk's parent port, whose subports the pool holds; empty for a host pool.
	Trunk string `json:"trunk,omitempty"`
	// SecurityGroups is the sorted, comma-separated set of security group IDs.
	SecurityGroups string `json:"securityGroups"`
}

// NewKey builds a key, sorting and de-duplicating the security groups.
func NewKey(project, network, host, trunk string, securityGroups []string) (Key, error) {
	k := Key{Project: project, Network: network, Host: host, Trunk: trunk, SecurityGroups: joinGroups(securityGroups)}
	return k, k.Validate()
}

func joinGroups(groups []string) string {
	var g []string
	for _, s := range groups {
		if s = strings.TrimSpace(s); s != "" {
			g = append(g, s)
		}
	}
	slices.Sort(g)
	return strings.Join(slices.Compact(g), ",")
}

// Groups returns the security groups as a list.
func (k Key) Groups() []string {
	if k.SecurityGroups == "" {
		return []string{}
	}
	return strings.Split(k.SecurityGroups, ",")
}

// Validate says what is wrong with a key.
func (k Key) Validate() error {
	switch {
	case k.Project == "":
		return fmt.Errorf("pool key: project: required")
	case k.Network == "":
		return fmt.Errorf("pool key: network: required")
	case (k.Host == "") == (k.Trunk == ""):
		return fmt.Errorf("pool key: exactly one of host (a per-host pool) or trunk (a pool of a trunk's subports) must be set; got host %q, trunk %q", k.Host, k.Trunk)
	case strings.ContainsAny(k.Project+k.Network+k.Host+k.Trunk, "/ "):
		return fmt.Errorf("pool key %s: names must not contain '/' or spaces", k)
	}
	if k.SecurityGroups != joinGroups(strings.Split(k.SecurityGroups, ",")) {
		return fmt.Errorf("pool key: securityGroups %q: must be sorted, unique and comma-separated", k.SecurityGroups)
	}
	return nil
}

// String is the key's one-line form, which ParseKey reads back:
// project/network/host=NAME/groups or project/network/trunk=PORT/groups.
func (k Key) String() string {
	where := "host=" + k.Host
	if k.Trunk != "" {
		where = "trunk=" + k.Trunk
	}
	return k.Project + "/" + k.Network + "/" + where + "/" + k.SecurityGroups
}

// ParseKey reads a key's one-line form.
func ParseKey(s string) (Key, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return Key{}, fmt.Errorf("pool key %q: want project/network/host=NODE/sg1,sg2 or project/network/trunk=PORT/sg1,sg2", s)
	}
	var host, trunk string
	switch where := parts[2]; {
	case strings.HasPrefix(where, "host="):
		host = strings.TrimPrefix(where, "host=")
	case strings.HasPrefix(where, "trunk="):
		trunk = strings.TrimPrefix(where, "trunk=")
	default:
		return Key{}, fmt.Errorf("pool key %q: third part %q: want host=NODE or trunk=PORT", s, where)
	}
	var groups []string
	if parts[3] != "" {
		groups = strings.Split(parts[3], ",")
	}
	return NewKey(parts[0], parts[1], host, trunk, groups)
}
