// Package manager runs the Neutron port pools: it keeps each pool filled with
// bulk creates, hands out ports to pods (recording the owner in Kubernetes
// first), recycles released ports, expires idle ones, sends Neutron
// bookkeeping synchronously or deferred and coalesced, and recovers every
// port after a restart. Its decisions are package portpool's.
package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
)

// DeviceOwner marks the ports netshift creates.
const DeviceOwner = "compute:netshift"

// ErrNotReady is the answer while the manager recovers or the pool is empty:
// retry shortly (a refill is on its way).
var ErrNotReady = errors.New("not ready, retry")

// Options configure a manager.
type Options struct {
	Settings portpool.Settings
	// ClusterID names the cluster in the tag every port carries ("netshift-cluster=ID").
	ClusterID string
	// Deferred sends Neutron bookkeeping in the background, coalesced per port, so that handing
	// out a port makes no Neutron call; otherwise Acquire waits for it.
	Deferred bool
	// FlushInterval is how often deferred bookkeeping is sent (default 200 ms).
	FlushInterval time.Duration
	// Backoff is the first pause after a failed Neutron call; it doubles up to a minute.
	Backoff time.Duration
	Log     logr.Logger
	// Reader reads pods past any cache (the API server itself); default: the client.
	Reader client.Reader
	// LateSweeps are when, after the recovery, ports no pool knows are looked
	// for again (default DefaultLateSweeps).
	LateSweeps []time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// Manager owns the pools.
type Manager struct {
	neutron *neutron.Client
	kube    client.Client
	reader  client.Reader
	opts    Options
	tag     string

	mu        sync.Mutex
	pools     map[portpool.Key]*poolState
	byOwner   map[string]string // pod (ns/name) → port ID
	ledger    portpool.Ledger
	sending   int // deferred updates taken from the ledger and not yet answered
	recovered bool
	deleting  map[string]portpool.Key // ports to delete, retried until gone
	// unresolved are the bulk creates whose outcome is not known (a timeout
	// or a 5xx, and no port with the batch's tag yet): Neutron may still be
	// making them. They are looked up again until their ports appear.
	unresolved map[string]unresolvedBatch // by batch tag
	// inflight are the batch tags of this manager's bulk creates in flight:
	// their ports may be in Neutron before the pool knows them.
	inflight map[string]bool
	trunks   map[string]string // parent port → trunk ID
	subnets  subnetCache

	creates chan struct{} // semaphore: concurrent create calls
	wake    chan struct{}
	metrics *metrics
}

// unresolvedBatch is a bulk create of key whose answer was lost at since.
type unresolvedBatch struct {
	key   portpool.Key
	since time.Time
}

// unresolvedFor is how long a bulk create whose answer was lost is looked up
// before it is taken as never made (a restart's recovery adopts any port of
// it that comes later still).
const unresolvedFor = 10 * time.Minute

type poolState struct {
	*portpool.Pool
	retryAt   time.Time
	backoff   time.Duration
	lastError string
}

// New builds a manager; Start runs it.
func New(nc *neutron.Client, kube client.Client, o Options) (*Manager, error) {
	if err := o.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("port pool settings: %w", err)
	}
	if o.ClusterID == "" {
		return nil, errors.New("port pools: the cluster ID (the tag of every port netshift creates) is required")
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 200 * time.Millisecond
	}
	if o.Backoff == 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Reader == nil {
		o.Reader = kube
	}
	return &Manager{neutron: nc, kube: kube, reader: o.Reader, opts: o, tag: "netshift-cluster=" + o.ClusterID,
		pools: map[portpool.Key]*poolState{}, byOwner: map[string]string{}, deleting: map[string]portpool.Key{}, unresolved: map[string]unresolvedBatch{}, inflight: map[string]bool{}, trunks: map[string]string{},
		creates: make(chan struct{}, o.Settings.MaxConcurrentCreates), wake: make(chan struct{}, 1), metrics: newMetrics()}, nil
}

// Neutron returns the manager's Neutron client.
func (m *Manager) Neutron() *neutron.Client { return m.neutron }

// Start recovers every port, then runs the refill, recycle, expiry and
// bookkeeping loops until ctx ends. Until recovery is done, Acquire answers
// ErrNotReady.
func (m *Manager) Start(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := m.recover(ctx)
		if err == nil {
			break
		}
		m.opts.Log.Error(err, "port pool recovery failed; retrying", "attempt", attempt+1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(m.pause(attempt)):
		}
	}
	tick := time.NewTicker(m.opts.FlushInterval)
	defer tick.Stop()
	sweeps := m.opts.LateSweeps
	if sweeps == nil {
		sweeps = DefaultLateSweeps
	}
	recovered := m.opts.Now()
	var late <-chan time.Time
	if len(sweeps) > 0 {
		late = time.After(sweeps[0])
	}
	recycle := time.NewTicker(m.opts.Settings.RecyclePeriod)
	defer recycle.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m.flush(flushCtx, true)
			cancel()
			return nil
		case <-m.wake:
			m.refill(ctx)
		case <-late:
			m.sweepLate(ctx)
			if sweeps, late = sweeps[1:], nil; len(sweeps) > 0 {
				late = time.After(max(0, sweeps[0]-m.opts.Now().Sub(recovered)))
			}
		case <-tick.C:
			m.flush(ctx, false)
			m.refill(ctx)
		case <-recycle.C:
			m.recycle(ctx)
			m.expire(ctx)
			m.retryDeletes(ctx)
			m.resolveBatches(ctx)
		}
		m.updateGauges()
	}
}

func (m *Manager) pause(attempt int) time.Duration {
	d := m.opts.Backoff << min(attempt, 7)
	return min(d, time.Minute)
}

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// pool returns the pool of key, creating it: the first request for a new key creates its pool.
func (m *Manager) pool(key portpool.Key) *poolState {
	p, ok := m.pools[key]
	if !ok {
		p = &poolState{Pool: portpool.NewPool(key)}
		m.pools[key] = p
	}
	return p
}

// Ready says whether recovery is done.
func (m *Manager) Ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recovered
}

func newBatchTag() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "netshift-batch=" + hex.EncodeToString(b)
}

// refill starts a bulk create for every pool below its minimum (or asked
// for while empty), as far as the concurrency limit allows.
func (m *Manager) refill(ctx context.Context) {
	m.mu.Lock()
	if !m.recovered {
		m.mu.Unlock()
		return
	}
	now := m.opts.Now()
	keys := make([]portpool.Key, 0, len(m.pools))
	for k := range m.pools {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	type job struct {
		key portpool.Key
		n   int
	}
	var jobs []job
	for _, k := range keys {
		p := m.pools[k]
		if now.Before(p.retryAt) {
			continue
		}
		if n := portpool.Refill(p.Counts(), m.opts.Settings); n > 0 {
			select {
			case m.creates <- struct{}{}:
			default:
				continue // the limit of concurrent creates: the next tick tries again
			}
			p.Creating += n
			p.Demand = false
			jobs = append(jobs, job{k, n})
		}
	}
	m.mu.Unlock()
	for _, j := range jobs {
		go func() {
			defer func() { <-m.creates }()
			_, _ = m.create(ctx, j.key, j.n)
		}()
	}
}

// Populate creates n ports for key now (in batches), whatever the minimum,
// and waits for them; it stops at the pool's maximum.
func (m *Manager) Populate(ctx context.Context, key portpool.Key, n int) (int, error) {
	if err := key.Validate(); err != nil {
		return 0, err
	}
	if !m.Ready() {
		return 0, fmt.Errorf("populate %s: %w (recovering)", key, ErrNotReady)
	}
	made, failures := 0, 0
	for made < n {
		m.mu.Lock()
		p := m.pool(key)
		batch := min(m.opts.Settings.Batch, n-made)
		if limit := m.opts.Settings.MaxSize; limit > 0 {
			batch = min(batch, limit-p.Counts().Total())
		}
		if batch <= 0 {
			m.mu.Unlock()
			return made, fmt.Errorf("populate %s: the pool is at its maximum size %d after %d new ports", key, m.opts.Settings.MaxSize, made)
		}
		p.Creating += batch
		m.mu.Unlock()
		m.creates <- struct{}{}
		got, err := m.create(ctx, key, batch)
		<-m.creates
		made += got
		if err != nil {
			if !neutron.Retryable(err) || failures >= 4 {
				return made, fmt.Errorf("populate %s: %w", key, err)
			}
			select { // over quota, a 5xx, a timeout: back off and try the batch again
			case <-time.After(m.pause(failures)):
			case <-ctx.Done():
				return made, ctx.Err()
			}
			failures++
		}
	}
	return made, nil
}

// create makes n ports of key with ONE bulk request (for a trunk pool, then
// adds them as subports in one more), and puts them in the pool. On an
// ambiguous failure (a timeout, a 5xx) it looks the batch up by its tag, so a
// create that happened anyway is adopted, not leaked.
func (m *Manager) create(ctx context.Context, key portpool.Key, n int) (int, error) {
	batch := newBatchTag()
	m.mu.Lock()
	m.inflight[batch] = true
	m.mu.Unlock()
	spec := neutron.NewPort{NetworkID: key.Network, ProjectID: key.Project, Name: portpool.AvailableName, DeviceOwner: DeviceOwner,
		SecurityGroups: key.Groups(), HostID: key.Host, Tags: []string{m.tag, batch}}
	specs := make([]neutron.NewPort, n)
	for i := range specs {
		specs[i] = spec
	}
	var created []neutron.Port
	// The network's subnets first (read once): a port is never made that could not be handed out.
	_, err := m.subnets.of(ctx, m.neutron, key.Network, false)
	if err == nil {
		start := m.opts.Now()
		created, err = m.neutron.CreatePorts(ctx, specs)
		m.metrics.createSeconds.Observe(m.opts.Now().Sub(start).Seconds())
	}
	if err != nil && neutron.Retryable(err) {
		found, lerr := m.neutron.ListPorts(ctx, url.Values{"tags": {batch}})
		if lerr == nil && len(found) > 0 {
			m.opts.Log.Info("bulk create failed but its ports exist; adopting them", "pool", key.String(), "ports", len(found), "error", err.Error())
			created, err = found, nil
		} else {
			// Neutron may make them still, after the answer was lost: looked up again later.
			m.mu.Lock()
			m.unresolved[batch] = unresolvedBatch{key: key, since: m.opts.Now()}
			m.mu.Unlock()
		}
	}
	var ports []portpool.Port
	if err == nil {
		ports, err = m.poolPorts(ctx, key, created)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inflight, batch)
	p := m.pool(key)
	p.Creating -= n
	if err != nil {
		p.lastError = err.Error()
		p.backoff = min(max(p.backoff*2, m.opts.Backoff), time.Minute)
		p.retryAt = m.opts.Now().Add(p.backoff)
		m.metrics.neutronErrors.Inc()
		m.opts.Log.Error(err, "create pooled ports", "pool", key.String(), "ports", n, "retryIn", p.backoff.String())
		return 0, err
	}
	p.backoff, p.lastError = 0, ""
	p.Return(m.opts.Now(), ports...)
	m.opts.Log.V(1).Info("pool refilled", "pool", key.String(), "ports", len(ports))
	return len(ports), nil
}

// joinTrunk adds a trunk pool's new ports to the trunk as subports, on free VLANs.
// poolPorts makes created ports of key pool ports (a trunk pool's join
// their trunk); ports that cannot be are deleted, not kept in no pool.
func (m *Manager) poolPorts(ctx context.Context, key portpool.Key, created []neutron.Port) ([]portpool.Port, error) {
	ports, err := m.joinTrunk(ctx, key, created)
	if err != nil {
		for _, p := range created {
			if derr := m.neutron.DeletePort(ctx, p.ID); derr != nil {
				m.mu.Lock()
				m.deleting[p.ID] = key
				m.mu.Unlock()
			}
		}
	}
	return ports, err
}

// resolveBatches looks up the bulk creates whose answer was lost: the ports
// of one that happened after all go into its pool, not leaked.
func (m *Manager) resolveBatches(ctx context.Context) {
	m.mu.Lock()
	todo := maps.Clone(m.unresolved)
	m.mu.Unlock()
	for tag, b := range todo {
		found, err := m.neutron.ListPorts(ctx, url.Values{"tags": {tag}})
		if err != nil {
			continue // looked up again next period
		}
		if len(found) == 0 {
			if m.opts.Now().Sub(b.since) > unresolvedFor {
				m.mu.Lock()
				delete(m.unresolved, tag)
				m.mu.Unlock()
				m.opts.Log.Info("a bulk create whose answer was lost made no port; no longer looked up", "pool", b.key.String(), "batch", tag,
					"after", unresolvedFor.String())
			}
			continue
		}
		ports, err := m.poolPorts(ctx, b.key, found)
		m.mu.Lock()
		delete(m.unresolved, tag)
		if err == nil {
			// The create happened after all: its error is no longer the pool's state.
			p := m.pool(b.key)
			p.backoff, p.lastError = 0, ""
			p.Return(m.opts.Now(), ports...)
		}
		m.mu.Unlock()
		if err != nil {
			m.opts.Log.Error(err, "the ports of a create whose answer was lost could not join their pool; deleted", "pool", b.key.String(), "ports", len(found))
			continue
		}
		m.opts.Log.Info("a bulk create whose answer was lost made its ports after all; adopted", "pool", b.key.String(), "ports", len(ports))
	}
}

func (m *Manager) joinTrunk(ctx context.Context, key portpool.Key, created []neutron.Port) ([]portpool.Port, error) {
	ports := make([]portpool.Port, len(created))
	for i, c := range created {
		var err error
		if ports[i], err = m.pooledPort(ctx, c); err != nil {
			return nil, err
		}
	}
	if key.Trunk == "" {
		return ports, nil
	}
	trunk, err := m.neutron.TrunkOfParent(ctx, key.Trunk)
	if err != nil {
		return nil, err
	}
	used := make([]int, len(trunk.Subports))
	for i, s := range trunk.Subports {
		used[i] = s.SegmentationID
	}
	ids, err := portpool.FreeSegmentationIDs(used, len(ports))
	if err != nil {
		return nil, fmt.Errorf("trunk %s: %w", trunk.ID, err)
	}
	subs := make([]neutron.Subport, len(ports))
	for i := range ports {
		ports[i].SegmentationID = ids[i]
		subs[i] = neutron.Subport{PortID: ports[i].ID, SegmentationType: "vlan", SegmentationID: ids[i]}
	}
	if err := m.neutron.AddSubports(ctx, trunk.ID, subs); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.trunks[key.Trunk] = trunk.ID
	m.mu.Unlock()
	return ports, nil
}

// deletePorts deletes ports of key in Neutron (a trunk's subports leave the
// trunk first); the ones that fail are retried later.
func (m *Manager) deletePorts(ctx context.Context, key portpool.Key, ids []string) {
	if len(ids) == 0 {
		return
	}
	if key.Trunk != "" {
		trunk, err := m.trunkID(ctx, key.Trunk)
		if err == nil {
			err = m.neutron.RemoveSubports(ctx, trunk, ids)
		}
		if err != nil && !neutron.NotFound(err) {
			m.opts.Log.Error(err, "take ports off their trunk", "pool", key.String())
		}
	}
	// Neutron has no bulk delete: the deletes go in parallel, as many at once as creates may.
	work := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < min(m.opts.Settings.MaxConcurrentCreates, len(ids)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				err := m.neutron.DeletePort(ctx, id)
				m.mu.Lock()
				m.ledger.Drop(id)
				if err != nil {
					m.deleting[id] = key
					m.opts.Log.Error(err, "delete port; will retry", "port", id)
				} else {
					delete(m.deleting, id)
					m.metrics.deleted.Inc()
				}
				m.mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

func (m *Manager) trunkID(ctx context.Context, parent string) (string, error) {
	m.mu.Lock()
	id, ok := m.trunks[parent]
	m.mu.Unlock()
	if ok {
		return id, nil
	}
	t, err := m.neutron.TrunkOfParent(ctx, parent)
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	m.trunks[parent] = t.ID
	m.mu.Unlock()
	return t.ID, nil
}

func (m *Manager) retryDeletes(ctx context.Context) {
	m.mu.Lock()
	byKey := map[portpool.Key][]string{}
	for id, k := range m.deleting {
		byKey[k] = append(byKey[k], id)
	}
	m.mu.Unlock()
	for k, ids := range byKey {
		sort.Strings(ids)
		m.deletePorts(ctx, k, ids)
	}
}

// expire deletes the ready ports idle past the idle timeout, above each pool's minimum.
func (m *Manager) expire(ctx context.Context) {
	now := m.opts.Now()
	m.mu.Lock()
	todo := map[portpool.Key][]string{}
	for k, p := range m.pools {
		if ids := portpool.Expire(p.Ready, m.opts.Settings, now); len(ids) > 0 {
			p.Remove(ids...)
			for _, id := range ids {
				m.deleting[id] = k // accounted for until Neutron confirms
			}
			todo[k] = ids
			m.metrics.expired.Add(float64(len(ids)))
		}
	}
	m.mu.Unlock()
	for k, ids := range todo {
		m.opts.Log.Info("idle ports expired", "pool", k.String(), "ports", len(ids))
		m.deletePorts(ctx, k, ids)
	}
}
