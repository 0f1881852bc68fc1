package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/operator"
)

// Plan is the JSON form of `netshift plan`.
type Plan struct {
	// Owners maps every node to the pool that owns it ("default" for the implicit pool).
	Owners map[string]string `json:"owners"`
	// Waves are the groups in which the nodes that need configuration would go.
	Waves [][]string `json:"waves"`
}

// Compute resolves pool ownership for every node and the waves of the nodes
// in only (every node when only is empty). Unknown names in only are an error.
func Compute(nodes []corev1.Node, pools []v1alpha1.NetshiftNodePool, only []string) (Plan, error) {
	m, err := operator.Membership(nodes, pools)
	if err != nil {
		return Plan{}, err
	}
	need := only
	if len(need) == 0 {
		for _, n := range nodes {
			need = append(need, n.Name)
		}
	}
	var unknown []string
	for _, n := range need {
		if _, ok := m.Owner[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return Plan{}, fmt.Errorf("--only: no such node: %s", strings.Join(unknown, ", "))
	}
	waves := m.Waves(need)
	if waves == nil {
		waves = [][]string{}
	}
	return Plan{Owners: m.Owner, Waves: waves}, nil
}

// WriteJSON prints the plan as JSON.
func (p Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// WriteText prints the plan for a person: owners grouped by pool, then waves.
func (p Plan) WriteText(w io.Writer) error {
	byPool := map[string][]string{}
	for n, pool := range p.Owners {
		byPool[pool] = append(byPool[pool], n)
	}
	pools := make([]string, 0, len(byPool))
	for pool := range byPool {
		pools = append(pools, pool)
	}
	sort.Strings(pools)
	fmt.Fprintln(w, "Pools (owner of each node):")
	for _, pool := range pools {
		sort.Strings(byPool[pool])
		fmt.Fprintf(w, "  %-20s %s\n", pool, strings.Join(byPool[pool], ", "))
	}
	fmt.Fprintf(w, "Waves (%d):\n", len(p.Waves))
	for i, wave := range p.Waves {
		fmt.Fprintf(w, "  %d: %s\n", i+1, strings.Join(wave, ", "))
	}
	return nil
}
