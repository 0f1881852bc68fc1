package rollout

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
)

// DefaultPriority is the priority of a NetshiftNodePool that sets none.
const DefaultPriority = 99

// MaxParallelCount is the largest count maxParallel takes (the API's bound).
const MaxParallelCount = 10000

var percentage = regexp.MustCompile(`^([1-9]|[1-9][0-9]|100)%$`)

// Pool is a NetshiftNodePool reduced to what the decisions need.
type Pool struct {
	Name     string
	Priority int32
	// MaxParallel as written: a count or a percentage; 0 means no limit.
	MaxParallel intstr.IntOrString
	// selectsAll is true for a pool with no terms.
	selectsAll bool
	terms      []compiledTerm
}

// Node is a Kubernetes Node reduced to what pool selection needs.
type Node struct {
	Name   string
	Labels map[string]string
}

// NewPool compiles a NetshiftNodePool. An error names the pool and the field.
func NewPool(np *v1alpha1.NetshiftNodePool) (Pool, error) {
	p := Pool{Name: np.Name, Priority: DefaultPriority, MaxParallel: intstr.FromInt32(1)}
	if np.Name == v1alpha1.DefaultPoolName {
		return Pool{}, fmt.Errorf("netshiftnodepool %q: metadata.name: %q is reserved for the implicit pool", np.Name, v1alpha1.DefaultPoolName)
	}
	if np.Spec.Priority != nil {
		p.Priority = *np.Spec.Priority
	}
	if p.Priority < 0 || p.Priority > 99 {
		return Pool{}, fmt.Errorf("netshiftnodepool %q: spec.priority: %d is outside 0..99", np.Name, p.Priority)
	}
	if np.Spec.MaxParallel != nil {
		p.MaxParallel = *np.Spec.MaxParallel
	}
	if _, err := ResolveLimit(p.MaxParallel, 1); err != nil {
		return Pool{}, fmt.Errorf("netshiftnodepool %q: spec.maxParallel: %w", np.Name, err)
	}
	if len(np.Spec.NodeSelectorTerms) == 0 {
		p.selectsAll = true
		return p, nil
	}
	for i, t := range np.Spec.NodeSelectorTerms {
		ct, err := compileTerm(t)
		if err != nil {
			return Pool{}, fmt.Errorf("netshiftnodepool %q: spec.nodeSelectorTerms[%d]: %w", np.Name, i, err)
		}
		p.terms = append(p.terms, ct)
	}
	return p, nil
}

// Selects reports whether the pool's selector matches the node: any term.
func (p Pool) Selects(n Node) bool {
	if p.selectsAll {
		return true
	}
	for _, t := range p.terms {
		if t.matches(n) {
			return true
		}
	}
	return false
}

// ResolveLimit turns maxParallel into a number of nodes for a pool that owns
// `owned` nodes: a count as is; a percentage of owned, rounded down but at
// least 1. 0 means no limit and is returned as 0.
func ResolveLimit(v intstr.IntOrString, owned int) (int, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 || v.IntVal > MaxParallelCount {
			return 0, fmt.Errorf("%d is outside 0..%d; want a count (0 = no limit) or a percentage from \"1%%\" to \"100%%\"", v.IntVal, MaxParallelCount)
		}
		return int(v.IntVal), nil
	}
	// The API server's rule, to the letter: no sign, no space, no leading zero.
	if !percentage.MatchString(v.StrVal) {
		return 0, fmt.Errorf("%q is not a count from 0 to %d or a percentage from \"1%%\" to \"100%%\"", v.StrVal, MaxParallelCount)
	}
	pct, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return max(1, owned*pct/100), nil
}

// Membership is who owns which node, and each pool's resolved limit.
type Membership struct {
	// Owner maps a node name to the name of the pool that owns it.
	Owner map[string]string
	// Members maps a pool name to its nodes in name order. Every pool is present, even empty ones;
	// the implicit pool "default" is present only when it owns a node.
	Members map[string][]string
	// Limit maps a pool name to how many of its nodes may hold a slot at once; 0 means no limit.
	Limit map[string]int
	// Held maps a node that no slot may be granted to now to the reason: an invalid pool might
	// own it (see Hold). Everything else about the node goes on, its slot's release included.
	Held map[string]string
	// LostTies maps a pool to the nodes it selects that a pool of the same priority owns (the
	// one whose name sorts first), in name order, and to that owner.
	LostTies map[string][]LostTie
}

// LostTie is a node a pool selects but another pool of its priority owns.
type LostTie struct {
	Node, Owner string
}

// InvalidPool is a NetshiftNodePool whose spec cannot be compiled (one stored before
// the API refused such specs). Its selector is unknown, so it might own any
// node that the pool owning it now does not outrank.
type InvalidPool struct {
	Name string
	// Priority as written; outside 0..99 it might outrank every pool.
	Priority int32
	Err      error
}

// Hold marks the nodes an invalid pool might take from their owner: those
// whose owner does not outrank it (the implicit pool outranks nothing). A
// held node is granted no slot, so no pool's limit can be exceeded by a
// membership that would change once the pool is fixed; nodes of the pools
// that outrank every invalid one are decided as usual.
func (m *Membership) Hold(pools []Pool, invalid []InvalidPool) {
	if len(invalid) == 0 {
		return
	}
	byName := make(map[string]Pool, len(pools))
	for _, p := range pools {
		byName[p.Name] = p
	}
	if m.Held == nil {
		m.Held = map[string]string{}
	}
	for node, owner := range m.Owner {
		for _, ip := range invalid {
			if p, ok := byName[owner]; ok && outranks(p, ip) {
				continue
			}
			m.Held[node] = fmt.Sprintf("netshiftnodepool %s is invalid and might own this node: %v", ip.Name, ip.Err)
			break
		}
	}
}

// outranks says whether p wins a node over the invalid pool ip.
func outranks(p Pool, ip InvalidPool) bool {
	if ip.Priority < 0 || ip.Priority > 99 {
		return false
	}
	return p.Priority < ip.Priority || p.Priority == ip.Priority && p.Name < ip.Name
}

// Resolve decides which pool owns each node: among the pools that select it,
// the one with the lowest priority number, ties broken by name in byte order;
// nodes no pool selects go to the implicit pool "default" (limit 1).
func Resolve(nodes []Node, pools []Pool) Membership {
	ordered := make([]Pool, len(pools))
	copy(ordered, pools)
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].Priority != ordered[j].Priority {
			return ordered[i].Priority < ordered[j].Priority
		}
		return ordered[i].Name < ordered[j].Name
	})
	m := Membership{
		Owner:   make(map[string]string, len(nodes)),
		Members: make(map[string][]string, len(pools)+1),
		Limit:   make(map[string]int, len(pools)+1),
	}
	for _, p := range ordered {
		m.Members[p.Name] = nil
	}
	for _, n := range nodes {
		owner := v1alpha1.DefaultPoolName
		for i, p := range ordered {
			if !p.Selects(n) {
				continue
			}
			owner = p.Name
			for _, q := range ordered[i+1:] {
				if q.Priority != p.Priority {
					break
				}
				if q.Selects(n) {
					if m.LostTies == nil {
						m.LostTies = map[string][]LostTie{}
					}
					m.LostTies[q.Name] = append(m.LostTies[q.Name], LostTie{Node: n.Name, Owner: p.Name})
				}
			}
			break
		}
		m.Owner[n.Name] = owner
		m.Members[owner] = append(m.Members[owner], n.Name)
	}
	for name := range m.Members {
		sort.Strings(m.Members[name])
	}
	for _, lost := range m.LostTies {
		sort.Slice(lost, func(i, j int) bool { return lost[i].Node < lost[j].Node })
	}
	for _, p := range ordered {
		// NewPool validated MaxParallel; an error here cannot happen.
		limit, _ := ResolveLimit(p.MaxParallel, len(m.Members[p.Name]))
		m.Limit[p.Name] = limit
	}
	if _, ok := m.Members[v1alpha1.DefaultPoolName]; ok {
		m.Limit[v1alpha1.DefaultPoolName] = 1
	}
	return m
}

// slots is how many more nodes of pool may start now, given how many hold one.
func (m Membership) slots(pool string, holding int) int {
	limit := m.Limit[pool]
	if limit == 0 {
		return math.MaxInt
	}
	return max(0, limit-holding)
}
