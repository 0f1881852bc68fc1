package scale

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/scheme"
)

// DrainReport is what a drain of every node under the pools cost.
type DrainReport struct {
	Nodes int `json:"nodes"`
	Pools int `json:"pools"`
	// Pods are the pods drained: bare ones on every node, and GuardedPods of Deployments
	// under PodDisruptionBudgets (maxUnavailable 10%).
	Pods        int `json:"pods"`
	GuardedPods int `json:"guardedPods"`
	// IdealWaves is how many waves the pools' limits allow at best (each slot always in use);
	// Waves how many there were in the pool that had the most, from the API server's watch of
	// the Nodes: each cordon takes the pool's slot freed last, and a pool's waves are
	// the most nodes one of its slots took in turn (poolSlots).
	IdealWaves int `json:"idealWaves"`
	Waves      int `json:"waves"`
	// TimedWaves is how many waves the busiest pool's drain lasted in time: from its first
	// cordon to its last uncordon over the median time a node of it was cordoned. Above
	// Waves, it is what slots left empty between a node and the next, and slow nodes, cost.
	TimedWaves float64 `json:"timedWaves"`
	// NodeSeconds is the median time a node was cordoned.
	NodeSeconds float64 `json:"nodeSeconds"`
	// Seconds is from the operation written to every node done; SecondsPerWave, over the ideal waves.
	Seconds        float64 `json:"seconds"`
	SecondsPerWave float64 `json:"secondsPerWave"`
	// Limit and Peak are each pool's limit and the most of its nodes cordoned at any moment the watch showed.
	Limit map[string]int `json:"limit"`
	Peak  map[string]int `json:"peak"`
	// OverLimit are the moments a pool had more nodes cordoned than its limit.
	OverLimit []string `json:"overLimit,omitempty"`
	// Failed are the nodes whose operation did not succeed.
	Failed []string `json:"failed,omitempty"`
	Cost
}

const (
	drainNamespace = "scale"
	drainOperation = "scale-drain"
)

func (s *sim) runDrain(ctx context.Context, o Options) (*DrainReport, error) {
	c := s.cluster.cp.Client
	pools := max(o.Pools, 1)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: drainNamespace}}); err != nil {
		return nil, err
	}
	for i := range pools {
		name := fmt.Sprintf("pool-%02d", i)
		np := &v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NetshiftNodePoolSpec{
			Priority: ptr.To(int32(10*(i%3) + 1)), MaxParallel: ptr.To(intstr.FromString("10%")),
			NodeSelectorTerms: []v1alpha1.NodeSelectorTerm{{MatchExpressions: []v1alpha1.NodeSelectorRequirement{
				{Key: poolLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{name}}}}}}}
		if err := c.Create(ctx, np); err != nil {
			return nil, fmt.Errorf("create NetshiftNodePool %s: %w", name, err)
		}
	}
	r := &DrainReport{Nodes: len(s.names), Pools: pools, Limit: map[string]int{}, Peak: map[string]int{}}
	if err := s.createDrainPods(ctx, o.PodsPerNode, r); err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	var nps v1alpha1.NetshiftNodePoolList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	if err := c.List(ctx, &nps); err != nil {
		return nil, err
	}
	m, err := operator.Membership(nodes.Items, nps.Items)
	if err != nil {
		return nil, err
	}
	r.IdealWaves = len(m.Waves(s.names))
	r.Limit = m.Limit
	cordons, err := s.watchCordons(ctx, m.Owner, m.Limit)
	if err != nil {
		return nil, err
	}
	defer cordons.stop()
	cost := s.startCost(ctx)
	start := time.Now()
	if err := operator.StartOperation(ctx, c, v1alpha1.NodeOperation{ID: drainOperation, Kind: v1alpha1.OperationReconfigure}, s.names); err != nil {
		return nil, err
	}
	fmt.Fprintf(s.out, "scale: reconfiguring %d nodes in %d pools (maxParallel 10%%, ideal %d waves)\n", len(s.names), pools, r.IdealWaves)
	if err := s.waitOperation(ctx, start, o.Timeout, r); err != nil {
		return nil, err
	}
	r.Seconds = time.Since(start).Seconds()
	r.Cost = cost.stop(ctx, len(s.names))
	r.SecondsPerWave = r.Seconds / float64(max(r.IdealWaves, 1))
	cordons.result(r)
	return r, nil
}

// createDrainPods puts podsPerNode-1 bare pods on every node, and one per node on average
// from Deployments under PodDisruptionBudgets, scheduled by kube-scheduler.
func (s *sim) createDrainPods(ctx context.Context, podsPerNode int, r *DrainReport) error {
	c := s.cluster.cp.Client
	bare := max(podsPerNode-1, 0)
	err := forEach(ctx, len(s.names)*bare, 32, func(ctx context.Context, i int) error {
		node := s.names[i/bare]
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", node, i%bare), Namespace: drainNamespace, Labels: map[string]string{"app": "bare"}},
			Spec: podSpec(node)}
		if err := c.Create(ctx, p); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.Pods = len(s.names) * bare
	if podsPerNode > 0 {
		groups := 10
		replicas := int32(len(s.names) / groups)
		for g := range groups {
			name := fmt.Sprintf("guarded-%d", g)
			labels := map[string]string{"app": name}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: drainNamespace}, Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("")}}}
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: drainNamespace}, Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromString("10%")), Selector: &metav1.LabelSelector{MatchLabels: labels}}}
			if err := c.Create(ctx, pdb); err != nil {
				return fmt.Errorf("create PodDisruptionBudget %s: %w", name, err)
			}
			if err := c.Create(ctx, d); err != nil {
				return fmt.Errorf("create Deployment %s: %w", name, err)
			}
			r.GuardedPods += int(replicas)
		}
	}
	fmt.Fprintf(s.out, "scale: %d bare pods and %d under PodDisruptionBudgets created; waiting for them to run\n", r.Pods, r.GuardedPods)
	want := r.Pods + r.GuardedPods
	r.Pods = want
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var pods corev1.PodList
		running := 0
		if err := c.List(ctx, &pods, client.InNamespace(drainNamespace)); err == nil {
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
		}
		if running >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 10 minutes %d of %d pods run (kwok, kube-scheduler)", running, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func podSpec(node string) corev1.PodSpec {
	return corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}
}

// waitOperation waits until every node's operation is over and its slot released.
func (s *sim) waitOperation(ctx context.Context, start time.Time, timeout time.Duration, r *DrainReport) error {
	last := time.Now()
	for {
		var states v1alpha1.NetshiftNodeStateList
		if err := s.cluster.cp.Client.List(ctx, &states); err != nil {
			return err
		}
		done, failed := 0, []string(nil)
		for _, st := range states.Items {
			s := st.Status
			if s.SyncOperation == drainOperation && s.DrainStatus == v1alpha1.DrainIdle &&
				(s.SyncStatus == v1alpha1.SyncSucceeded || s.SyncStatus == v1alpha1.SyncFailed) {
				done++
				if s.SyncStatus == v1alpha1.SyncFailed {
					failed = append(failed, st.Name)
				}
			}
		}
		if done >= len(s.names) {
			sort.Strings(failed)
			r.Failed = failed
			return nil
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Fprintf(s.out, "scale: %d of %d nodes done after %s\n", done, len(s.names), time.Since(start).Round(time.Second))
		}
		if e := s.cluster.ended(); e != "" {
			return fmt.Errorf("during the drain: %s", e)
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("the drain did not end in %s: %d of %d nodes done", timeout, done, len(s.names))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// cordonWatch follows the Nodes' cordons through a watch of the API server:
// how many of each pool's nodes are cordoned at every event, and the waves.
type cordonWatch struct {
	mu        sync.Mutex
	owner     map[string]string
	limit     map[string]int
	cordoned  map[string]bool
	inPool    map[string]int
	peak      map[string]int
	over      []string
	slots     map[string]*poolSlots
	since     map[string]time.Time       // when a node was cordoned
	held      map[string][]time.Duration // each pool's nodes' cordoned times
	span      map[string][2]time.Time    // each pool's first cordon and last uncordon
	stopWatch func()
}

func (s *sim) watchCordons(ctx context.Context, owner map[string]string, limit map[string]int) (*cordonWatch, error) {
	wc, err := client.NewWithWatch(s.cluster.cp.Admin, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	w, err := wc.Watch(ctx, &corev1.NodeList{})
	if err != nil {
		return nil, fmt.Errorf("watch Nodes: %w", err)
	}
	cw := &cordonWatch{owner: owner, limit: limit, cordoned: map[string]bool{}, inPool: map[string]int{}, peak: map[string]int{},
		slots: map[string]*poolSlots{}, since: map[string]time.Time{}, held: map[string][]time.Duration{},
		span: map[string][2]time.Time{}, stopWatch: w.Stop}
	for pool, l := range limit {
		cw.slots[pool] = newPoolSlots(l)
	}
	go func() {
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
				cw.seen(n.Name, n.Spec.Unschedulable)
			}
		}
	}()
	return cw, nil
}

func (w *cordonWatch) seen(node string, cordoned bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cordoned[node] == cordoned {
		return
	}
	w.cordoned[node] = cordoned
	pool := w.owner[node]
	now := time.Now()
	span := w.span[pool]
	if !cordoned {
		w.inPool[pool]--
		w.slotsOf(pool).uncordoned(node, now)
		if at, ok := w.since[node]; ok {
			w.held[pool] = append(w.held[pool], now.Sub(at))
			span[1] = now
			w.span[pool] = span
		}
		return
	}
	w.since[node] = now
	if span[0].IsZero() {
		span[0] = now
		w.span[pool] = span
	}
	w.slotsOf(pool).cordoned(node)
	w.inPool[pool]++
	w.peak[pool] = max(w.peak[pool], w.inPool[pool])
	if l := w.limit[pool]; l > 0 && w.inPool[pool] > l {
		w.over = append(w.over, fmt.Sprintf("%s: %d nodes cordoned at %s (limit %d)", pool, w.inPool[pool], time.Now().Format("15:04:05.000"), l))
	}
}

func (w *cordonWatch) result(r *DrainReport) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.slots {
		r.Waves = max(r.Waves, p.waves())
	}
	var all []float64
	for pool, held := range w.held {
		secs := make([]float64, len(held))
		for i, d := range held {
			secs[i] = d.Seconds()
			all = append(all, d.Seconds())
		}
		median := percentiles(secs)[0]
		if span := w.span[pool]; median > 0 && !span[1].IsZero() {
			r.TimedWaves = max(r.TimedWaves, span[1].Sub(span[0]).Seconds()/median)
		}
	}
	r.NodeSeconds = percentiles(all)[0]
	r.Peak, r.OverLimit = w.peak, w.over
}

// slotsOf is pool's slots (a pool the drain did not know of has none to start with).
func (w *cordonWatch) slotsOf(pool string) *poolSlots {
	if w.slots[pool] == nil {
		w.slots[pool] = newPoolSlots(0)
	}
	return w.slots[pool]
}

func (w *cordonWatch) stop() { w.stopWatch() }

func (d *DrainReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "drain of %d nodes in %d pools (maxParallel 10%%), %d pods of which %d under PodDisruptionBudgets\n", d.Nodes, d.Pools, d.Pods, d.GuardedPods)
	fmt.Fprintf(w, "  waves %d (ideal %d); in time the busiest pool lasted %.1f waves of a node's median cordoned time (%.1f s); %.1f s in all, %.2f s per ideal wave\n",
		d.Waves, d.IdealWaves, d.TimedWaves, d.NodeSeconds, d.Seconds, d.SecondsPerWave)
	over := 0
	for pool, l := range d.Limit {
		if d.Peak[pool] > l {
			over++
		}
	}
	fmt.Fprintf(w, "  pools over their limit at any moment (from the Nodes' watch): %d; moments over: %d\n", over, len(d.OverLimit))
	if len(d.Failed) > 0 {
		fmt.Fprintf(w, "  nodes whose operation failed: %d (%s)\n", len(d.Failed), clip(fmt.Sprint(d.Failed), 200))
	}
	d.Cost.writeText(w)
}
