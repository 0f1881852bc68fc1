package portpool

import (
	"fmt"
	"sort"
)

// Found is a port netshift created (tagged with its cluster), as listed from
// Neutron after a restart.
type Found struct {
	Port
	// Key is the pool the port's Neutron fields name; invalid when they name none (a trunk
	// subport whose trunk is gone, a port that never joined its trunk).
	Key Key
	// Clean is true when the port waits as a pooled port does (named available-port, no device).
	Clean bool
}

// Recovery is what a restarted manager does with every port it finds.
type Recovery struct {
	// Ready ports go back to their pools as they are; Recycle ports need their Neutron reset first.
	Ready, Recycle map[Key][]Port
	// InUse are the ports a live pod owns, by key.
	InUse map[Key][]Owned
	// Delete are the true orphans, each with the reason.
	Delete map[string]string
	// Missing are the pods whose recorded port is not in Neutron (pod → port ID).
	Missing map[string]string
}

// Recover sorts the ports found in Neutron after a restart. owners maps a
// port ID to the live pod that owns it (from the ownership records in
// Kubernetes). A port a live pod owns stays its; a free port returns to its
// pool (reset first unless it is clean); only a port that belongs to no pool,
// or that would take a pool past its maximum, is deleted.
func Recover(found []Found, owners map[string]string, s Settings) Recovery {
	r := Recovery{Ready: map[Key][]Port{}, Recycle: map[Key][]Port{}, InUse: map[Key][]Owned{}, Delete: map[string]string{}, Missing: map[string]string{}}
	sorted := append([]Found(nil), found...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	seen := map[string]bool{}
	var free []Found
	count := map[Key]int{}
	for _, f := range sorted {
		seen[f.ID] = true
		if owner := owners[f.ID]; owner != "" {
			r.InUse[f.Key] = append(r.InUse[f.Key], Owned{Port: f.Port, Owner: owner})
			count[f.Key]++
			continue
		}
		if err := f.Key.Validate(); err != nil {
			r.Delete[f.ID] = fmt.Sprintf("belongs to no pool (%v)", err)
			continue
		}
		free = append(free, f)
	}
	for _, f := range free {
		if s.MaxSize > 0 && count[f.Key] >= s.MaxSize {
			r.Delete[f.ID] = fmt.Sprintf("pool %s is at its maximum of %d", f.Key, s.MaxSize)
			continue
		}
		count[f.Key]++
		if f.Clean {
			r.Ready[f.Key] = append(r.Ready[f.Key], f.Port)
		} else {
			r.Recycle[f.Key] = append(r.Recycle[f.Key], f.Port)
		}
	}
	for id, owner := range owners {
		if !seen[id] {
			r.Missing[owner] = id
		}
	}
	return r
}
