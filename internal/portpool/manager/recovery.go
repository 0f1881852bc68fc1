package manager

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
)

// recover rebuilds the pools from Neutron and Kubernetes: every port tagged
// with this cluster is listed, with the trunks' subports and every pod's
// ownership record; a live pod keeps its port, free ports return to their
// pools, and only true orphans are deleted.
func (m *Manager) recover(ctx context.Context) error {
	ports, err := m.neutron.ListPorts(ctx, url.Values{"tags": {m.tag}})
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	inUse, deleted, err := m.adopt(ctx, ports, false)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	m.mu.Lock()
	m.recovered = true
	m.mu.Unlock()
	m.opts.Log.Info("port pools recovered", "ports", len(ports), "inUse", inUse, "orphansDeleted", deleted, "pools", len(m.pools))
	m.poke()
	return nil
}

// DefaultLateSweeps are when, after its recovery, the manager looks once
// more for ports of its cluster that no pool knows: a bulk create that its
// predecessor sent just before it was killed lands in Neutron after the
// recovery listed the ports, and nothing else would ever adopt them.
var DefaultLateSweeps = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute}

// sweepLate adopts the ports of the cluster that no pool knows and that are
// none of this manager's own creates in flight (their batch tags say so).
func (m *Manager) sweepLate(ctx context.Context) {
	ports, err := m.neutron.ListPorts(ctx, url.Values{"tags": {m.tag}})
	if err != nil {
		m.opts.Log.Error(err, "look for ports created after the recovery; trying again at the next sweep")
		return
	}
	m.mu.Lock()
	known := m.knownPorts()
	var late []neutron.Port
	for _, p := range ports {
		ours := slices.ContainsFunc(p.Tags, func(t string) bool {
			_, unresolved := m.unresolved[t]
			return m.inflight[t] || unresolved
		})
		if !known[p.ID] && !ours {
			late = append(late, p)
		}
	}
	m.mu.Unlock()
	// A port deleted between the listing and the look at the pools (a drain's,
	// a failed trunk join's) is in neither: it must not come back.
	late = slices.DeleteFunc(late, func(p neutron.Port) bool {
		_, err := m.neutron.GetPort(ctx, p.ID)
		return err != nil
	})
	if len(late) == 0 {
		return
	}
	inUse, deleted, err := m.adopt(ctx, late, true)
	if err != nil {
		m.opts.Log.Error(err, "adopt ports created after the recovery; trying again at the next sweep", "ports", len(late))
		return
	}
	m.opts.Log.Info("adopted ports created after the recovery (a bulk create of a killed predecessor)", "ports", len(late), "inUse", inUse, "orphansDeleted", deleted)
	m.poke()
}

// knownPorts are the ports in the pools and those being deleted; under m.mu.
func (m *Manager) knownPorts() map[string]bool {
	known := map[string]bool{}
	for _, p := range m.pools {
		for _, port := range p.Ready {
			known[port.ID] = true
		}
		for _, port := range p.Recycling {
			known[port.ID] = true
		}
		for id := range p.InUse {
			known[id] = true
		}
	}
	for id := range m.deleting {
		known[id] = true
	}
	return known
}

// adopt puts ports of the cluster into their pools: with the trunks'
// subports and every pod's ownership record, a live pod keeps its port, free
// ports return to their pools (within their maximum size), and only true
// orphans are deleted. late says the ports are a late sweep's, not all of the
// cluster's: a port that cannot be read is left to a later sweep, and the
// pods' records are not checked against them.
func (m *Manager) adopt(ctx context.Context, ports []neutron.Port, late bool) (inUse, deleted int, err error) {
	trunks, err := m.neutron.ListTrunks(ctx)
	if err != nil {
		return 0, 0, err
	}
	type membership struct {
		parent string
		vlan   int
	}
	subport := map[string]membership{}
	trunkIDs := map[string]string{}
	for _, t := range trunks {
		trunkIDs[t.PortID] = t.ID
		for _, s := range t.Subports {
			subport[s.PortID] = membership{t.PortID, s.SegmentationID}
		}
	}
	var pods corev1.PodList
	if err := m.reader.List(ctx, &pods); err != nil {
		return 0, 0, fmt.Errorf("list pods: %w", err)
	}
	owners := map[string]string{}
	for i := range pods.Items {
		a, ok, err := AssignmentOf(&pods.Items[i])
		if err != nil {
			m.opts.Log.Error(err, "ignoring an unreadable ownership record")
			continue
		}
		if ok {
			owners[a.ID] = OwnerOf(&pods.Items[i])
		}
	}
	found := make([]portpool.Found, 0, len(ports))
	for _, p := range ports {
		groups := append([]string(nil), p.SecurityGroups...)
		sort.Strings(groups)
		pooled, err := m.pooledPort(ctx, p)
		if err != nil && late {
			m.opts.Log.Error(err, "a port created after the recovery cannot be read; left to the next sweep", "port", p.ID)
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		f := portpool.Found{Port: pooled, Clean: p.Name == portpool.AvailableName && p.DeviceID == ""}
		host, trunk := p.HostID, ""
		if s, ok := subport[p.ID]; ok {
			host, trunk = "", s.parent
			f.SegmentationID = s.vlan
		}
		// An invalid key (no host and no trunk) marks a port of no pool; Recover deletes it.
		f.Key, _ = portpool.NewKey(p.ProjectID, p.NetworkID, host, trunk, groups)
		found = append(found, f)
	}
	r := portpool.Recover(found, owners, m.opts.Settings)
	now := m.opts.Now()
	m.mu.Lock()
	for parent, id := range trunkIDs {
		m.trunks[parent] = id
	}
	over := map[string]string{}
	for k, ready := range r.Ready {
		p := m.pool(k)
		if limit := m.opts.Settings.MaxSize; limit > 0 && p.Counts().Total()+len(ready) > limit {
			keep := max(0, limit-p.Counts().Total())
			for _, port := range ready[keep:] {
				over[port.ID] = fmt.Sprintf("over pool %s's maximum of %d", k, limit)
				m.deleting[port.ID] = k
			}
			ready = ready[:keep]
		}
		p.Return(now, ready...)
	}
	for k, rec := range r.Recycle {
		p := m.pool(k)
		if m.opts.Deferred {
			for _, port := range rec {
				m.ledger.Set(port.ID, resetOf(k), now)
			}
			p.Return(now, rec...)
		} else {
			p.Recycling = append(p.Recycling, rec...)
		}
	}
	for k, owned := range r.InUse {
		p := m.pool(k)
		for _, o := range owned {
			p.InUse[o.ID] = o
			m.byOwner[o.Owner] = o.ID
			inUse++
		}
	}
	m.mu.Unlock()
	keyOf := make(map[string]portpool.Key, len(found))
	for _, f := range found {
		keyOf[f.ID] = f.Key
	}
	byKey := map[portpool.Key][]string{}
	maps.Copy(over, r.Delete)
	for id, why := range over {
		m.opts.Log.Info("deleting an orphaned port", "port", id, "reason", why)
		byKey[keyOf[id]] = append(byKey[keyOf[id]], id)
	}
	for k, ids := range byKey {
		sort.Strings(ids)
		m.deletePorts(ctx, k, ids)
	}
	for pod, id := range r.Missing {
		if !late {
			m.opts.Log.Info("a pod's recorded port is not in Neutron", "pod", pod, "port", id)
		}
	}
	return inUse, len(over), nil
}
