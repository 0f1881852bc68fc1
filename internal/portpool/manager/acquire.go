package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// PortAnnotation on a pod records the port it owns (an Assignment in JSON).
// It is written before the port is handed out: it is the ownership record a
// restarted manager recovers from.
const PortAnnotation = plug.PoolAnnotation

// Assignment is a pod's port (see portpool.Assignment).
type Assignment = portpool.Assignment

// OwnerOf is the owner name of a pod: namespace/name.
func OwnerOf(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// AssignmentOf reads a pod's ownership record.
func AssignmentOf(pod *corev1.Pod) (Assignment, bool, error) {
	raw, ok := pod.Annotations[PortAnnotation]
	if !ok {
		return Assignment{}, false, nil
	}
	a, err := portpool.ParseAssignment(raw)
	if err != nil {
		return Assignment{}, true, fmt.Errorf("pod %s: annotation %s: %w", OwnerOf(pod), PortAnnotation, err)
	}
	return a, true, nil
}

// Acquire gives pod a port from key's pool. The owner is recorded on the pod
// before the port counts as handed out; a pod that already owns one gets the
// same port again. An empty pool, or a manager still recovering, answers
// ErrNotReady and the pool is refilled.
func (m *Manager) Acquire(ctx context.Context, pod *corev1.Pod, key portpool.Key) (Assignment, error) {
	start := m.opts.Now()
	owner := OwnerOf(pod)
	if err := key.Validate(); err != nil {
		return Assignment{}, fmt.Errorf("pod %s: %w", owner, err)
	}
	m.mu.Lock()
	if !m.recovered {
		m.mu.Unlock()
		m.metrics.acquire.WithLabelValues("not-ready").Inc()
		return Assignment{}, fmt.Errorf("pod %s: %w: the port pools are recovering after a restart", owner, ErrNotReady)
	}
	p := m.pool(key)
	var port portpool.Port
	held := false
	if id, ok := m.byOwner[owner]; ok {
		if o, ok := p.InUse[id]; ok {
			port, held = o.Port, true // a retry after an uncertain record: the same port
		}
	}
	if !held {
		var ok bool
		if port, ok = p.Take(owner); !ok {
			m.mu.Unlock()
			m.poke()
			m.metrics.acquire.WithLabelValues("miss").Inc()
			return Assignment{}, fmt.Errorf("pod %s: pool %s is empty: %w (a refill is on its way)", owner, key, ErrNotReady)
		}
		m.byOwner[owner] = port.ID
	}
	m.mu.Unlock()
	m.poke()
	m.metrics.decisionSeconds.Observe(m.opts.Now().Sub(start).Seconds())

	a := Assignment{ID: port.ID, MAC: port.MAC, IPs: port.IPs, Addresses: port.Addresses, MTU: port.MTU, Pool: key.String(), SegmentationID: port.SegmentationID}
	if err := m.recordOwner(ctx, pod, a); err != nil {
		var gone *podGoneError
		if errors.As(err, &gone) {
			m.mu.Lock()
			p.Untake(port.ID)
			delete(m.byOwner, owner)
			m.mu.Unlock()
		}
		// Otherwise the record may have landed: the port stays this pod's, and a retry records it again.
		return Assignment{}, fmt.Errorf("pod %s: record port %s: %w", owner, port.ID, err)
	}
	bk := portpool.Bookkeeping{Name: owner, DeviceID: string(pod.UID)}
	if m.opts.Deferred {
		m.queueBookkeeping(port.ID, bk, m.opts.FlushInterval)
	} else if err := m.sendBookkeeping(ctx, port.ID, bk); err != nil {
		// The pod owns the port (recorded); the bookkeeping is retried in the background.
		m.opts.Log.Error(err, "port bookkeeping failed; retrying in the background", "pod", owner, "port", port.ID)
		m.queueBookkeeping(port.ID, bk, m.opts.Backoff)
	}
	m.metrics.acquire.WithLabelValues("hit").Inc()
	m.metrics.acquireSeconds.Observe(m.opts.Now().Sub(start).Seconds())
	return a, nil
}

// queueBookkeeping has an owner's bookkeeping sent after a while, unless the
// owner let the port go meanwhile (a slow or failed update can outlast its
// pod): sent after the port's reset, it would name a gone pod on a free port.
func (m *Manager) queueBookkeeping(id string, bk portpool.Bookkeeping, after time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byOwner[bk.Name] == id {
		m.ledger.Set(id, bk, m.opts.Now().Add(after))
	}
}

type podGoneError struct{ reason string }

func (e *podGoneError) Error() string { return e.reason }

// recordOwner writes the assignment on the pod, only if it is still the same
// pod (same UID, not being deleted) and has no other port.
func (m *Manager) recordOwner(ctx context.Context, pod *corev1.Pod, a Assignment) error {
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	cur := pod.DeepCopy()
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			if err := m.reader.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
				if apierrors.IsNotFound(err) {
					return &podGoneError{"the pod is gone"}
				}
				return err
			}
		}
		if cur.UID != pod.UID || cur.DeletionTimestamp != nil {
			return &podGoneError{"the pod is being deleted or was replaced"}
		}
		if have, ok, _ := AssignmentOf(cur); ok {
			if have.ID == a.ID {
				return nil
			}
			return &podGoneError{fmt.Sprintf("the pod already owns port %s", have.ID)}
		}
		patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[PortAnnotation] = string(raw)
		err := m.kube.Patch(ctx, cur, patch)
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			return &podGoneError{"the pod is gone"}
		case apierrors.IsConflict(err):
			continue
		default:
			return err
		}
	}
	return fmt.Errorf("the pod kept changing")
}

// Release returns the port a pod owned (the pod is gone) for recycling. In
// deferred mode it is ready again at once: its reset waits in the ledger and
// is replaced by the next owner's bookkeeping if it is handed out first.
func (m *Manager) Release(owner string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.byOwner[owner]
	if !ok {
		return "", false
	}
	delete(m.byOwner, owner)
	for _, p := range m.pools {
		port, ok := p.Release(id)
		if !ok {
			continue
		}
		m.metrics.released.Inc()
		// The gone owner's bookkeeping still waiting for a retry (synchronous
		// mode, after a failed update) would name it on a port reset since.
		m.ledger.Drop(id)
		if m.opts.Deferred {
			p.Remove(id) // no Neutron reset to wait for: the reset goes to the ledger
			if portpool.KeepRecycled(p.Counts(), m.opts.Settings) {
				m.ledger.Set(id, resetOf(p.Key), m.opts.Now().Add(m.opts.Settings.RecyclePeriod))
				p.Return(m.opts.Now(), port)
			} else {
				m.deleting[id] = p.Key
			}
		}
		return id, true
	}
	return id, false
}

func resetOf(k portpool.Key) portpool.Bookkeeping {
	return portpool.Bookkeeping{Name: portpool.AvailableName, DeviceID: "", ResetGroups: true, Groups: k.SecurityGroups}
}

// recycle resets the released ports (synchronous mode) and returns them to
// their pools, or deletes them where a pool is at its maximum. A port stays
// in its pool's recycling set until then, so it is always accounted for.
func (m *Manager) recycle(ctx context.Context) {
	m.mu.Lock()
	todo := map[portpool.Key][]portpool.Port{}
	for k, p := range m.pools {
		if len(p.Recycling) > 0 {
			todo[k] = append([]portpool.Port(nil), p.Recycling...)
		}
	}
	m.mu.Unlock()
	for k, ports := range todo {
		var drop []string
		for _, port := range ports {
			err := m.sendBookkeeping(ctx, port.ID, resetOf(k))
			if err != nil && !neutron.NotFound(err) {
				m.opts.Log.Error(err, "reset a released port; retrying next period", "port", port.ID)
				continue
			}
			m.mu.Lock()
			p := m.pool(k)
			p.Remove(port.ID)
			switch {
			case err != nil: // gone from Neutron: nothing to recycle
			case portpool.KeepRecycled(p.Counts(), m.opts.Settings):
				p.Return(m.opts.Now(), port)
				m.metrics.recycled.Inc()
			default:
				drop = append(drop, port.ID)
				m.deleting[port.ID] = k
			}
			m.mu.Unlock()
		}
		m.deletePorts(ctx, k, drop)
	}
}

// sendBookkeeping makes one port update.
func (m *Manager) sendBookkeeping(ctx context.Context, id string, b portpool.Bookkeeping) error {
	u := neutron.PortUpdate{Name: &b.Name, DeviceID: &b.DeviceID}
	if b.ResetGroups {
		groups := []string{}
		if b.Groups != "" {
			groups = strings.Split(b.Groups, ",")
		}
		u.SecurityGroups = &groups
	}
	_, err := m.neutron.UpdatePort(ctx, id, u)
	return err
}

// flush sends the deferred bookkeeping that is due (all of it when all).
func (m *Manager) flush(ctx context.Context, all bool) {
	now := m.opts.Now()
	m.mu.Lock()
	var due []portpool.Update
	if all {
		due = m.ledger.Due(time.Time{})
	} else {
		due = m.ledger.Due(now)
	}
	m.sending += len(due)
	m.mu.Unlock()
	for _, u := range due {
		err := m.sendBookkeeping(ctx, u.PortID, u.Bookkeeping)
		m.mu.Lock()
		m.sending--
		m.mu.Unlock()
		if err == nil || neutron.NotFound(err) {
			continue
		}
		m.opts.Log.Error(err, "deferred port bookkeeping failed; retrying", "port", u.PortID)
		m.mu.Lock()
		// Retried only while it is still the port's news: nothing newer waits,
		// and it is a reset or its owner still holds the port (a pod released
		// while its update was in flight must not be named on the port again).
		if _, newer := m.ledger.Pending(u.PortID); !newer && (u.ResetGroups || m.byOwner[u.Name] == u.PortID) {
			m.ledger.Set(u.PortID, u.Bookkeeping, now.Add(m.opts.Backoff))
		}
		m.mu.Unlock()
	}
}
