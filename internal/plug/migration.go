package plug

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Binding is one pod using a port: during a live migration the source and
// the target pod use the same port on two nodes.
type Binding struct {
	Pod     string // namespace/name
	Node    string
	Created time.Time
	// Target marks the pod a migration moves the VM to (MigrationTargetAnnotation):
	// creation times have one-second resolution, too coarse to order a quick
	// migration back.
	Target bool
}

// ChassisOptions are the logical switch port options netshift owns.
const (
	OptionRequestedChassis   = "requested-chassis"
	OptionActivationStrategy = "activation-strategy"
)

// LogicalPortOptions computes what a logical switch port's options should
// become given the pods that use it: one node means requested-chassis is that
// node; two or more (a migration) means "source,target": the source first, the
// pod marked as a migration's target after it, else in the order the pods were created, with activation-strategy=rarp so the target blocks the port
// until the resumed VM announces itself and both chassis never fight over it.
// It returns the options to set and those to remove; both empty when current
// already matches, or when no pod uses the port (then netshift leaves it be).
func LogicalPortOptions(current map[string]string, bindings []Binding) (set map[string]string, remove []string) {
	var nodes []string
	sorted := append([]Binding(nil), bindings...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Target != sorted[j].Target {
			return !sorted[i].Target
		}
		if !sorted[i].Created.Equal(sorted[j].Created) {
			return sorted[i].Created.Before(sorted[j].Created)
		}
		return sorted[i].Pod < sorted[j].Pod
	})
	seen := map[string]bool{}
	for _, b := range sorted {
		if b.Node != "" && !seen[b.Node] {
			seen[b.Node] = true
			nodes = append(nodes, b.Node)
		}
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	set = map[string]string{}
	if want := strings.Join(nodes, ","); current[OptionRequestedChassis] != want {
		set[OptionRequestedChassis] = want
	}
	if len(nodes) > 1 {
		if current[OptionActivationStrategy] != "rarp" {
			set[OptionActivationStrategy] = "rarp"
		}
	} else if _, ok := current[OptionActivationStrategy]; ok {
		remove = append(remove, OptionActivationStrategy)
	}
	if len(set) == 0 {
		set = nil
	}
	return set, remove
}

// HandOverLimit is how long a port's hand-over waits for the chassis it
// leaves to let go (a node that is down never does).
const HandOverLimit = 3 * time.Second

// HandOver says whether a port's requested-chassis may change from current
// to next now, given the chassis the southbound database has the port bound
// to (boundMain, "" when none) and how long the change has waited.
//
// A chassis that leaves the list while it still holds the port, its pod gone,
// releases the port in a transaction of its own; measured with OVN 23.03, when
// that release lands after the next chassis has claimed the port it empties
// the binding (chassis cleared under the new owner) until the new owner
// claims it again: 10 to 35 ms in which the port is bound nowhere and its
// peers' traffic is dropped. While the leaving chassis lets go first, the
// port stays bound to its other (additional) chassis, which the peers keep
// sending to, and the new owner's claim is the last write: nothing is lost.
// So the change waits, up to limit, until no leaving chassis is bound.
func HandOver(current string, next []string, boundMain string, waited, limit time.Duration) bool {
	if boundMain == "" || waited >= limit {
		return true
	}
	// Wait only while the chassis holding the port is one that leaves (not
	// one that stays, nor one netshift never asked for).
	return !slices.Contains(Leaving(current, next), boundMain)
}

// Leaving lists the chassis of requested-chassis current that next drops.
func Leaving(current string, next []string) []string {
	var out []string
	for _, c := range strings.Split(current, ",") {
		if c != "" && !slices.Contains(next, c) {
			out = append(out, c)
		}
	}
	return out
}
