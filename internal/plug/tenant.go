package plug

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// What a cluster admin writes on a namespace to let its pods name ports in
// netshift.io/port-spec. Tenants cannot change a namespace's labels or
// annotations (Kubernetes' edit and admin roles do not grant it), so none of
// this can come from the pods it governs.
const (
	// PortSpecOptInLabel opts a namespace in, with the value PortSpecEnabled:
	// elsewhere the agent plugs no port a pod names.
	PortSpecOptInLabel = "netshift.io/port-spec"
	PortSpecEnabled    = "enabled"
	// PortIDsAnnotation lists the ports of the namespace: port IDs, or
	// prefixes ending in "*", separated by commas.
	PortIDsAnnotation = "netshift.io/port-ids"
	// MaxPortsAnnotation bounds how many ports the namespace's pods have
	// plugged on one node (each is an OVS bridge in per-port mode).
	MaxPortsAnnotation = "netshift.io/max-ports-per-node"
	// DefaultMaxPortsPerNode is the bound when the namespace sets none.
	DefaultMaxPortsPerNode = 16
	maxPortsPerNodeLimit   = 256
	maxPortIDEntries       = 256
)

// ErrNotAllowed is a port-spec refused by its namespace's settings.
var ErrNotAllowed = errors.New("port not allowed")

// ErrAtLimit is a port-spec refused, for now, by its namespace's limit on the
// node: it may be allowed once another of its ports goes.
var ErrAtLimit = errors.New("at the namespace's limit")

// NamespacePorts is what a namespace's pods may plug by naming a port.
type NamespacePorts struct {
	Namespace string
	OptedIn   bool
	// IDs and Prefixes are the namespace's ports.
	IDs      map[string]bool
	Prefixes []string
	// MaxPerNode bounds the ports its pods have plugged on one node.
	MaxPerNode int
}

// NamespacePortsOf reads a namespace's labels and annotations. An invalid
// annotation is an error naming it and what it allows; the namespace's pods
// then get no port until it is fixed.
func NamespacePortsOf(namespace string, labels, annotations map[string]string) (NamespacePorts, error) {
	np := NamespacePorts{Namespace: namespace, OptedIn: labels[PortSpecOptInLabel] == PortSpecEnabled,
		IDs: map[string]bool{}, MaxPerNode: DefaultMaxPortsPerNode}
	if !np.OptedIn {
		return np, nil // its other settings do not matter: none of its pods may name a port
	}
	field := func(key string) string { return "namespace " + namespace + " annotation " + key }
	if v, ok := annotations[MaxPortsAnnotation]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPortsPerNodeLimit {
			return NamespacePorts{}, fmt.Errorf("%s: %s is not a whole number from 1 to %d", field(MaxPortsAnnotation), Clip(v), maxPortsPerNodeLimit)
		}
		np.MaxPerNode = n
	}
	entries := strings.Split(annotations[PortIDsAnnotation], ",")
	if len(entries) > maxPortIDEntries {
		return NamespacePorts{}, fmt.Errorf("%s: %d entries, at most %d (use prefixes ending in *)", field(PortIDsAnnotation), len(entries), maxPortIDEntries)
	}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case strings.HasSuffix(e, "*") && portID.MatchString(strings.TrimSuffix(e, "*")):
			np.Prefixes = append(np.Prefixes, strings.TrimSuffix(e, "*"))
		case portID.MatchString(e):
			np.IDs[e] = true
		default:
			return NamespacePorts{}, fmt.Errorf("%s: %s is neither a port ID nor a prefix ending in * "+
				"(1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit)", field(PortIDsAnnotation), Clip(e))
		}
	}
	return np, nil
}

// Owns says whether the port is one of the namespace's.
func (np NamespacePorts) Owns(id string) bool {
	if np.IDs[id] {
		return true
	}
	for _, p := range np.Prefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// Allow decides whether pod owner (namespace/name) of the namespace may have
// port p plugged on a node where plugged is what netshift has plugged: the
// namespace must be opted in, own the port, and stay within its ports on the
// node (every port plugged for its other pods counts, pooled ones too).
func (np NamespacePorts) Allow(p Port, owner string, plugged []Plugged) error {
	if !np.OptedIn {
		return fmt.Errorf("port %s: %w: namespace %s is not opted in to %s (a cluster admin labels it %s=%s)",
			Clip(p.ID), ErrNotAllowed, np.Namespace, PortSpecAnnotation, PortSpecOptInLabel, PortSpecEnabled)
	}
	if !np.Owns(p.ID) {
		return fmt.Errorf("port %s: %w: not a port of namespace %s (its annotation %s lists them)",
			Clip(p.ID), ErrNotAllowed, np.Namespace, PortIDsAnnotation)
	}
	n := 0
	for _, pl := range plugged {
		if ns, _, _ := strings.Cut(pl.Owner, "/"); ns == np.Namespace && !pl.Parked() && pl.PortID != p.ID && pl.Owner != owner {
			n++
		}
	}
	if n >= np.MaxPerNode {
		return fmt.Errorf("port %s: %w, %w: namespace %s has %d ports plugged on this node, its limit (%s)",
			Clip(p.ID), ErrNotAllowed, ErrAtLimit, np.Namespace, n, MaxPortsAnnotation)
	}
	return nil
}

// MayShareNames says whether a port of this namespace could have the same
// derived names (tap, pbr- bridge: the first 11 characters of the ID, dashes
// removed) as port id of another namespace, and by which of its entries. Two
// namespaces whose ports' names can meet could block each other's ports on a
// node, whoever plugs first: such a port is refused in both until an admin
// gives them port IDs that differ in their first 11 characters.
func (np NamespacePorts) MayShareNames(id string) (string, bool) {
	short := shortID(id, 11)
	for e := range np.IDs {
		if shortID(e, 11) == short {
			return e, true
		}
	}
	for _, p := range np.Prefixes {
		if lead := shortID(p, 11); len(lead) <= len(short) && strings.HasPrefix(short, lead) {
			return p + "*", true
		}
	}
	return "", false
}

// maxQuoted is how much of a value from a pod or a namespace a message quotes.
const maxQuoted = 80

// Clip quotes s for a message, cut to a bounded length: what a tenant writes
// is echoed into conditions and logs, never whole.
func Clip(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxQuoted]) + fmt.Sprintf("... (%d bytes)", len(s))
}
