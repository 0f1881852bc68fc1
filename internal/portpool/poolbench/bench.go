// Package poolbench measures the port pools side by side in one run, against
// a real Neutron and a real API server: a pod's port acquisition from a warm
// pool with deferred bookkeeping, from a warm pool with synchronous
// bookkeeping, and without pools; the pool decision alone; and the Neutron
// requests per pod over a churn of pods in deferred mode.
package poolbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
	"netshift.io/netshift/internal/portpool/manager"
)

// Options configure a run.
type Options struct {
	NeutronURL string
	// Pods is how many pods each measurement takes.
	Pods int
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// Latency is a distribution's median and 99th percentile, in milliseconds.
type Latency struct {
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
}

// Report is what a run measured.
type Report struct {
	Pods int `json:"pods"`
	// PooledDeferred, PooledSync and Unpooled: from the pod's request to its port being usable
	// (ownership recorded in Kubernetes; Neutron bookkeeping done when synchronous).
	PooledDeferred Latency `json:"pooledDeferred"`
	PooledSync     Latency `json:"pooledSync"`
	Unpooled       Latency `json:"unpooled"`
	// Decision is the pool's choice of a port alone (in-memory).
	Decision Latency `json:"decision"`
	// NeutronCallsPerPod is every Neutron HTTP request during a churn of Pods pods (deferred,
	// warm pool, 20 pods alive at a time), divided by Pods.
	NeutronCallsPerPod float64        `json:"neutronCallsPerPod"`
	NeutronCallsByKind map[string]int `json:"neutronCallsByKind"`
	ChurnSeconds       float64        `json:"churnSeconds"`
}

// Run measures; it starts its own API server and creates (then deletes) its
// network, security group and ports in Neutron.
func Run(ctx context.Context, o Options) (Report, error) {
	r := Report{Pods: o.Pods}
	began := time.Now()
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%6.1fs  "+format+"\n", append([]any{time.Since(began).Seconds()}, args...)...)
		}
	}
	say("starting a real API server (envtest)")
	cp, err := controlplane.Start()
	if err != nil {
		return r, err
	}
	defer cp.Stop()
	nc, err := neutron.Connect(ctx, neutron.Options{URL: o.NeutronURL})
	if err != nil {
		return r, err
	}
	stamp := time.Now().Format("150405")
	project := "bench-" + stamp
	net, err := nc.CreateNetwork(ctx, project, "bench", "10.200.0.0/20")
	if err != nil {
		return r, err
	}
	sg, err := nc.CreateSecurityGroup(ctx, project, "bench")
	if err != nil {
		return r, err
	}
	key, err := portpool.NewKey(project, net, "bench-node", "", []string{sg})
	if err != nil {
		return r, err
	}
	ns := "bench"
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return r, err
	}
	// The manager records ports on pods as the operator: only it may.
	asOperator, err := cp.OperatorClient()
	if err != nil {
		return r, err
	}
	b := &bench{ctx: ctx, kube: cp.Client, operator: asOperator, nc: nc, key: key, ns: ns, cluster: "bench-" + stamp}

	for i, mode := range []struct {
		name     string
		deferred bool
		out      *Latency
	}{{"warm pool, deferred bookkeeping", true, &r.PooledDeferred}, {"warm pool, synchronous bookkeeping", false, &r.PooledSync}} {
		say("%s: %d pods", mode.name, o.Pods)
		lat, err := b.pooled(mode.deferred, o.Pods, i == 0, i == 1)
		if err != nil {
			return r, fmt.Errorf("%s: %w", mode.name, err)
		}
		*mode.out = lat
	}
	say("no pool (a create and a read per pod): %d pods", o.Pods)
	if r.Unpooled, err = b.unpooled(o.Pods); err != nil {
		return r, fmt.Errorf("no pool: %w", err)
	}
	r.Decision = decision(o.Pods)
	say("churn of %d pods, deferred bookkeeping, counting Neutron requests", o.Pods)
	if err := b.churn(o.Pods, &r); err != nil {
		return r, fmt.Errorf("churn: %w", err)
	}
	return r, nil
}

type bench struct {
	ctx  context.Context
	kube client.Client // admin: the pods
	// operator writes what only the operator may: the pods' port records.
	operator client.Client
	nc       *neutron.Client
	key      portpool.Key
	ns       string
	cluster  string
	pods     int
}

// pod creates a scheduled pod (not timed).
func (b *bench) pod() (*corev1.Pod, error) {
	b.pods++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", b.pods), Namespace: b.ns},
		Spec: corev1.PodSpec{NodeName: b.key.Host, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	return p, b.kube.Create(b.ctx, p)
}

func (b *bench) remove(p *corev1.Pod) error {
	return client.IgnoreNotFound(b.kube.Delete(b.ctx, p, client.GracePeriodSeconds(0)))
}

// startManager runs a manager until the returned stop, which frees its
// ports when free is true (otherwise the next manager of the same id
// recovers them: the two pooled modes share one populated pool).
func (b *bench) startManager(s portpool.Settings, deferred bool, id string) (*manager.Manager, func(free bool), error) {
	m, err := manager.New(b.nc, b.operator, manager.Options{Settings: s, ClusterID: b.cluster + "-" + id, Deferred: deferred})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { _ = m.Start(ctx); close(done) }()
	for !m.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	return m, func(free bool) {
		if free {
			_, _ = m.Free(b.ctx, nil)
		}
		cancel()
		<-done
	}, nil
}

// pooled times n acquisitions from a warm pool of n ports: the first mode
// populates it, the last frees it.
func (b *bench) pooled(deferred bool, n int, first, last bool) (Latency, error) {
	s := portpool.Settings{MinReady: 0, Batch: 50, RecyclePeriod: 50 * time.Millisecond, MaxConcurrentCreates: 4}
	m, stop, err := b.startManager(s, deferred, "pooled")
	if err != nil {
		return Latency{}, err
	}
	defer func() { stop(last) }()
	if first {
		if _, err := m.Populate(b.ctx, b.key, n); err != nil {
			return Latency{}, err
		}
	}
	for m.List().Pools == nil || m.List().Pools[0].Ready < n {
		time.Sleep(20 * time.Millisecond) // recovered ports still being reset
	}
	var times []time.Duration
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		p, err := b.pod()
		if err != nil {
			return Latency{}, err
		}
		pods = append(pods, p)
		start := time.Now()
		if _, err := m.Acquire(b.ctx, p, b.key); err != nil {
			return Latency{}, err
		}
		times = append(times, time.Since(start))
	}
	for _, p := range pods {
		if err := b.remove(p); err != nil {
			return Latency{}, err
		}
		m.Release(manager.OwnerOf(p))
	}
	for st := m.List(); st.Pending > 0 || st.Pools[0].Recycling > 0; st = m.List() {
		time.Sleep(20 * time.Millisecond) // every port back, reset, before the next mode recovers them
	}
	return summarize(times), nil
}

// unpooled times a port per pod the way it is done without pools: one
// create, one read, and the same ownership record on the pod.
func (b *bench) unpooled(n int) (Latency, error) {
	var times []time.Duration
	var ids []string
	defer func() {
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(ids); i += 4 {
					_ = b.nc.DeletePort(b.ctx, ids[i])
				}
			}()
		}
		wg.Wait()
	}()
	for i := 0; i < n; i++ {
		p, err := b.pod()
		if err != nil {
			return Latency{}, err
		}
		start := time.Now()
		port, err := b.nc.CreatePort(b.ctx, neutron.NewPort{NetworkID: b.key.Network, ProjectID: b.key.Project, Name: p.Namespace + "/" + p.Name,
			DeviceOwner: manager.DeviceOwner, SecurityGroups: b.key.Groups(), HostID: b.key.Host})
		if err != nil {
			return Latency{}, err
		}
		ids = append(ids, port.ID)
		if _, err := b.nc.GetPort(b.ctx, port.ID); err != nil {
			return Latency{}, err
		}
		patch := client.MergeFrom(p.DeepCopy())
		p.Annotations = map[string]string{manager.PortAnnotation: fmt.Sprintf(`{"id":%q,"mac":%q,"pool":"none"}`, port.ID, port.MACAddress)}
		if err := b.operator.Patch(b.ctx, p, patch); err != nil {
			return Latency{}, err
		}
		times = append(times, time.Since(start))
		if err := b.remove(p); err != nil {
			return Latency{}, err
		}
	}
	return summarize(times), nil
}

// decision times the pool's choice alone, on a pool of n ready ports.
func decision(n int) Latency {
	p := portpool.NewPool(portpool.Key{})
	now := time.Now()
	for i := 0; i < n; i++ {
		p.Return(now, portpool.Port{ID: fmt.Sprint(i)})
	}
	times := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		p.Take("ns/pod")
		times = append(times, time.Since(start))
	}
	return summarize(times)
}

// churn runs n pods through a warm pool in deferred mode, 20 alive at a time,
// and counts every Neutron request from the first pod to the last bookkeeping.
func (b *bench) churn(n int, r *Report) error {
	const alive = 20
	s := portpool.Settings{MinReady: 10, Batch: 10, MaxSize: 0, RecyclePeriod: time.Second, MaxConcurrentCreates: 2}
	m, stop, err := b.startManager(s, true, "churn")
	if err != nil {
		return err
	}
	defer stop(true)
	if _, err := m.Populate(b.ctx, b.key, alive+s.MinReady); err != nil {
		return err
	}
	for m.List().Pending > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	before := b.nc.Calls().Snapshot()
	start := time.Now()
	var live []*corev1.Pod
	for i := 0; i < n; i++ {
		p, err := b.pod()
		if err != nil {
			return err
		}
		for {
			_, err := m.Acquire(b.ctx, p, b.key)
			if err == nil {
				break
			}
			if !isNotReady(err) {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		live = append(live, p)
		if len(live) > alive {
			if err := b.remove(live[0]); err != nil {
				return err
			}
			m.Release(manager.OwnerOf(live[0]))
			live = live[1:]
		}
		time.Sleep(5 * time.Millisecond) // pods live long enough for their bookkeeping to be due
	}
	for _, p := range live {
		if err := b.remove(p); err != nil {
			return err
		}
		m.Release(manager.OwnerOf(p))
	}
	deadline := time.Now().Add(time.Minute)
	for m.List().Pending > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r.ChurnSeconds = time.Since(start).Seconds()
	after := b.nc.Calls().Snapshot()
	r.NeutronCallsByKind = map[string]int{}
	total := 0
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			r.NeutronCallsByKind[k] = d
			total += d
		}
	}
	r.NeutronCallsPerPod = float64(total) / float64(n)
	return nil
}

func isNotReady(err error) bool { return errors.Is(err, manager.ErrNotReady) }

func summarize(times []time.Duration) Latency {
	if len(times) == 0 {
		return Latency{}
	}
	s := slices.Clone(times)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		i := int(q * float64(len(s)-1))
		return float64(s[i].Microseconds()) / 1000
	}
	return Latency{P50Ms: at(0.5), P99Ms: at(0.99)}
}

// WriteText prints a report side by side.
func WriteText(w io.Writer, r Report) {
	fmt.Fprintf(w, "pod port acquisition, %d pods each (from the pod's request to its port being usable):\n", r.Pods)
	fmt.Fprintf(w, "  %-36s p50 %8.2f ms   p99 %8.2f ms\n", "warm pool, deferred bookkeeping", r.PooledDeferred.P50Ms, r.PooledDeferred.P99Ms)
	fmt.Fprintf(w, "  %-36s p50 %8.2f ms   p99 %8.2f ms\n", "warm pool, synchronous bookkeeping", r.PooledSync.P50Ms, r.PooledSync.P99Ms)
	fmt.Fprintf(w, "  %-36s p50 %8.2f ms   p99 %8.2f ms\n", "no pool (create + read)", r.Unpooled.P50Ms, r.Unpooled.P99Ms)
	fmt.Fprintf(w, "  %-36s p50 %8.4f ms   p99 %8.4f ms\n", "the pool decision alone", r.Decision.P50Ms, r.Decision.P99Ms)
	fmt.Fprintf(w, "Neutron requests per pod over a churn of %d pods (deferred, 20 alive at a time, %.1f s): %.2f\n", r.Pods, r.ChurnSeconds, r.NeutronCallsPerPod)
	kinds := make([]string, 0, len(r.NeutronCallsByKind))
	for k := range r.NeutronCallsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %-20s %d\n", k, r.NeutronCallsByKind[k])
	}
}
