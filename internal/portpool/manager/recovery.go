package manager

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	corev1 "k8s.io/api/core/v1"

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
	trunks, err := m.neutron.ListTrunks(ctx)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
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
		return fmt.Errorf("recover: list pods: %w", err)
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
		if err != nil {
			return fmt.Errorf("recover: %w", err)
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
	for k, ready := range r.Ready {
		m.pool(k).Return(now, ready...)
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
	inUse := 0
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
	for id, why := range r.Delete {
		m.opts.Log.Info("deleting an orphaned port", "port", id, "reason", why)
		byKey[keyOf[id]] = append(byKey[keyOf[id]], id)
	}
	for k, ids := range byKey {
		sort.Strings(ids)
		m.deletePorts(ctx, k, ids)
	}
	for pod, id := range r.Missing {
		m.opts.Log.Info("a pod's recorded port is not in Neutron", "pod", pod, "port", id)
	}
	m.mu.Lock()
	m.recovered = true
	m.mu.Unlock()
	m.opts.Log.Info("port pools recovered", "ports", len(ports), "inUse", inUse, "orphansDeleted", len(r.Delete), "pools", len(m.pools))
	m.poke()
	return nil
}
