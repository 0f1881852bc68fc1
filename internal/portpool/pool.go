package portpool

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// AvailableName is the Neutron name of a port that waits in a pool.
const AvailableName = "available-port"

// Port is one pooled port.
type Port struct {
	ID  string   `json:"id"`
	MAC string   `json:"mac"`
	IPs []string `json:"ips,omitempty"`
	// Addresses are IPs as the pod's interface carries them, with their
	// subnets' prefix lengths and gateways.
	Addresses []Address `json:"addresses,omitempty"`
	// MTU is the port's network's MTU (0: unknown).
	MTU int `json:"mtu,omitempty"`
	// SegmentationID is the VLAN of a trunk's subport (0 for a host pool's port).
	SegmentationID int `json:"segmentationID,omitempty"`
	// IdleSince is when the port last became ready.
	IdleSince time.Time `json:"idleSince,omitempty"`
}

// Address is one of a port's addresses as its pod's interface carries it.
type Address struct {
	// CIDR is the address with its subnet's prefix length ("10.1.0.5/24").
	CIDR string `json:"cidr"`
	// Gateway is the subnet's gateway, the pod's default route ("" for none).
	Gateway string `json:"gateway,omitempty"`
}

// Owned is a port handed out, with its owner (a pod, namespace/name).
type Owned struct {
	Port
	Owner string `json:"owner"`
}

// Pool is one pool's ports. The manager holds one per key, under its lock.
type Pool struct {
	Key Key
	// Ready are the ports ready to hand out, the most recently returned last.
	Ready []Port
	// InUse are the ports handed out, by port ID.
	InUse map[string]Owned
	// Recycling are the released ports waiting for the recycler.
	Recycling []Port
	// Creating counts the ports of bulk creates in flight.
	Creating int
	// Demand is set when a request found the pool empty, until the next refill starts.
	Demand bool
}

// NewPool is an empty pool.
func NewPool(k Key) *Pool { return &Pool{Key: k, InUse: map[string]Owned{}} }

// Counts are a pool's sizes.
type Counts struct {
	Ready, InUse, Recycling, Creating int
	Demand                            bool
}

// Total is every port the pool accounts for.
func (c Counts) Total() int { return c.Ready + c.InUse + c.Recycling + c.Creating }

// Counts returns the pool's sizes.
func (p *Pool) Counts() Counts {
	return Counts{Ready: len(p.Ready), InUse: len(p.InUse), Recycling: len(p.Recycling), Creating: p.Creating, Demand: p.Demand}
}

// Take hands the most recently returned ready port to owner. Handing out the
// newest keeps the oldest idle, so that those above the minimum expire and
// the pool shrinks back after a burst. An empty pool records the demand.
func (p *Pool) Take(owner string) (Port, bool) {
	if len(p.Ready) == 0 {
		p.Demand = true
		return Port{}, false
	}
	port := p.Ready[len(p.Ready)-1]
	p.Ready = p.Ready[:len(p.Ready)-1]
	p.InUse[port.ID] = Owned{Port: port, Owner: owner}
	return port, true
}

// Untake puts back a port whose handing out failed before it was recorded.
func (p *Pool) Untake(id string) {
	if o, ok := p.InUse[id]; ok {
		delete(p.InUse, id)
		p.Ready = append(p.Ready, o.Port)
	}
}

// Release moves a port from in use to recycling; false if the pool does not have it in use.
func (p *Pool) Release(id string) (Port, bool) {
	o, ok := p.InUse[id]
	if !ok {
		return Port{}, false
	}
	delete(p.InUse, id)
	p.Recycling = append(p.Recycling, o.Port)
	return o.Port, true
}

// Return puts ports back among the ready ones, idle from now.
func (p *Pool) Return(now time.Time, ports ...Port) {
	for _, port := range ports {
		port.IdleSince = now
		p.Ready = append(p.Ready, port)
	}
}

// Remove drops ports from the ready and recycling sets (deleted in Neutron).
func (p *Pool) Remove(ids ...string) {
	drop := func(ports []Port) []Port {
		return slices.DeleteFunc(ports, func(q Port) bool { return slices.Contains(ids, q.ID) })
	}
	p.Ready, p.Recycling = drop(p.Ready), drop(p.Recycling)
}

// Refill is how many ports to create now for a pool with these counts: a
// batch when its ready ports (with those being created) fall below the
// minimum, or when a request found it empty; never past the maximum.
func Refill(c Counts, s Settings) int {
	want := s.MinReady
	if c.Demand && want < 1 {
		want = 1
	}
	if c.Ready+c.Creating >= want {
		return 0
	}
	n := s.Batch
	if s.MaxSize > 0 {
		n = min(n, s.MaxSize-c.Total())
	}
	return max(n, 0)
}

// KeepRecycled says whether a port back from the recycler returns to its
// pool (true) or is deleted because the pool is at its maximum. c are the
// pool's counts without that port.
func KeepRecycled(c Counts, s Settings) bool {
	return s.MaxSize == 0 || c.Total() < s.MaxSize
}

// Expire lists the ready ports to delete: those idle for IdleTimeout or
// more, oldest first, never leaving fewer than MinReady.
func Expire(ready []Port, s Settings, now time.Time) []string {
	if s.IdleTimeout == 0 || len(ready) <= s.MinReady {
		return nil
	}
	old := slices.Clone(ready)
	sort.SliceStable(old, func(i, j int) bool { return old[i].IdleSince.Before(old[j].IdleSince) })
	var ids []string
	for _, p := range old[:len(old)-s.MinReady] {
		if now.Sub(p.IdleSince) >= s.IdleTimeout {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// Segmentation IDs a trunk's subports may use (VLAN IDs).
const (
	MinSegmentationID = 1
	MaxSegmentationID = 4094
)

// FreeSegmentationIDs picks the n lowest VLAN IDs no subport of the trunk uses.
func FreeSegmentationIDs(used []int, n int) ([]int, error) {
	taken := map[int]bool{}
	for _, u := range used {
		taken[u] = true
	}
	var ids []int
	for id := MinSegmentationID; id <= MaxSegmentationID && len(ids) < n; id++ {
		if !taken[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) < n {
		return nil, fmt.Errorf("trunk: only %d free segmentation IDs in %d..%d, %d wanted", len(ids), MinSegmentationID, MaxSegmentationID, n)
	}
	return ids, nil
}
