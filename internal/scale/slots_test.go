package scale

import (
	"fmt"
	"testing"
	"time"
)

// TestPoolSlotsCountsWaves: a pool of 6 nodes with a limit of 2 drained node after node,
// every slot refilled as it frees, takes 3 waves, however the nodes' times interleave;
// one that leaves a slot unused while nodes go one at a time takes more; a cordon over
// the limit takes a slot of its own.
func TestPoolSlotsCountsWaves(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	type event struct {
		node     string
		cordoned bool
		at       int
	}
	cases := []struct {
		name   string
		limit  int
		events []event
		want   int
	}{
		{"both slots refilled in turn", 2, []event{
			{"a", true, 0}, {"b", true, 0}, {"a", false, 1}, {"c", true, 1}, {"b", false, 3}, {"d", true, 3},
			{"c", false, 4}, {"e", true, 4}, {"d", false, 5}, {"f", true, 5}, {"e", false, 6}, {"f", false, 7}}, 3},
		{"nodes one after another with a slot free take the slot freed last", 2, []event{
			{"a", true, 0}, {"b", true, 0}, {"b", false, 1}, {"a", false, 2}, {"c", true, 3}, {"c", false, 4},
			{"d", true, 5}, {"d", false, 6}, {"e", true, 7}, {"f", true, 7}, {"e", false, 8}, {"f", false, 8}}, 4},
		{"one slot left unused but at the end", 2, []event{
			{"a", true, 0}, {"a", false, 1}, {"b", true, 1}, {"b", false, 2}, {"c", true, 2}, {"c", false, 3},
			{"d", true, 3}, {"d", false, 4}, {"e", true, 4}, {"f", true, 4}, {"e", false, 5}, {"f", false, 5}}, 5},
		{"over the limit", 1, []event{{"a", true, 0}, {"b", true, 0}, {"a", false, 1}, {"b", false, 1}}, 1},
		{"a repeated event changes nothing", 1, []event{{"a", true, 0}, {"a", true, 0}, {"a", false, 1}, {"a", false, 1}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPoolSlots(c.limit)
			for _, e := range c.events {
				if e.cordoned {
					p.cordoned(e.node)
				} else {
					p.uncordoned(e.node, at(e.at))
				}
			}
			if got := p.waves(); got != c.want {
				t.Errorf("waves = %d, want %d (slots %s)", got, c.want, fmt.Sprint(p.slots))
			}
		})
	}
}
