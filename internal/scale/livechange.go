package scale

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/scheme"
)

// ChangeReport is what a live change cost on the simulated cluster.
type ChangeReport struct {
	Kind  v1alpha1.ChangeKind `json:"kind"`
	Nodes int                 `json:"nodes"`
	// Phase is how the change ended.
	Phase v1alpha1.ChangePhase `json:"phase"`
	// Message is the change's last status message.
	Message string `json:"message,omitempty"`
	// PreconditionsSeconds is from the spec patch to the last node's precondition report:
	// to the last report this process's watch saw, or to when T0 was first seen (in the
	// cluster's plan or the change's status) if sooner. The operator sets T0 only once
	// every node answered, and on a busy API server the watch of thousands of states
	// lags by seconds behind the operator's.
	PreconditionsSeconds float64 `json:"preconditionsSeconds"`
	// LeadSeconds is how far ahead of T0 the T0 was first seen: in the cluster's plan,
	// which the operator writes first, or in the change's status.
	LeadSeconds float64 `json:"leadSeconds"`
	// T0ToEndSeconds is from T0 to the change's end (Succeeded, or however it ended).
	T0ToEndSeconds float64 `json:"t0ToEndSeconds"`
	// TotalSeconds is from the spec patch to the change's end.
	TotalSeconds float64 `json:"totalSeconds"`
	// StepLate are how late the nodes' steps started after their time (ms): p50, p99, max.
	StepLateMs [3]float64 `json:"stepLateMs"`
	// StepsLate counts the steps that started more than 100 ms late; StepsRun all steps run;
	// StepsAgain the steps a node reported more than once (run again after a report was lost).
	StepsLate  int `json:"stepsLate"`
	StepsRun   int `json:"stepsRun"`
	StepsAgain int `json:"stepsAgain"`
	// Failed and Silent are the nodes given a failing step and silenced after their preconditions.
	Failed []string `json:"failed,omitempty"`
	Silent []string `json:"silent,omitempty"`
	// Restored are the failing nodes back on the old values, Reported those the change's status names.
	Restored int `json:"restored"`
	Reported int `json:"reported"`
	// Applied counts the nodes that carry the new value at the end.
	Applied int `json:"applied"`
	Cost
}

// changeWatch follows the NetshiftNodeStates through one watch of the API server.
type changeWatch struct {
	mu       sync.Mutex
	reportAt map[string]time.Time // a node's precondition report first seen
	onReport func(node string)
	changeID string
	// kind is the change's.
	kind v1alpha1.ChangeKind
}

func (w *changeWatch) id() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changeID
}

func (w *changeWatch) setID(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changeID = id
}

func (w *changeWatch) answered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.reportAt)
}

// lastReport is when the last node's precondition report was first seen.
func (w *changeWatch) lastReport() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, at := range w.reportAt {
		if at.After(last) {
			last = at
		}
	}
	return last
}

func (w *changeWatch) seen(nns *v1alpha1.NetshiftNodeState) {
	// The node's report of a change of this kind (the run asks for one; its ID is
	// "<kind>-<generation>-<attempt>"), known before the NetshiftNetwork's status names it.
	r := nns.Status.LiveChange
	if r == nil || !strings.HasPrefix(r.ID, strings.ToLower(string(w.kind))+"-") || strings.HasSuffix(r.ID, "-rollback") {
		return
	}
	w.mu.Lock()
	_, had := w.reportAt[nns.Name]
	if !had {
		w.reportAt[nns.Name] = time.Now()
	}
	on := w.onReport
	w.mu.Unlock()
	if !had && on != nil {
		on(nns.Name)
	}
}

// runChange patches the NetshiftNetwork to value (an MTU or a tunnel port) and follows the change to its end.
func (s *sim) runChange(ctx context.Context, kind v1alpha1.ChangeKind, value int32, o Options) (*ChangeReport, error) {
	failing, silent := pick(s.names, o.FailPercent, 0), pick(s.names, o.SilentPercent, 1)
	for _, n := range failing {
		s.nodes[n].FailStep(firstStep(kind))
	}
	w, stop, err := s.watchReports(ctx, kind, silent)
	if err != nil {
		return nil, err
	}
	defer stop()
	cost := s.startCost(ctx)
	start := time.Now()
	if err := s.patchNetwork(ctx, kind, value, failurePolicy(o, len(failing)+len(silent))); err != nil {
		return nil, err
	}
	fmt.Fprintf(s.out, "scale: %s -> %d on %d nodes (%d failing a step, %d silent after their preconditions)\n", kind, value, len(s.names), len(failing), len(silent))
	r := &ChangeReport{Kind: kind, Nodes: len(s.names), Failed: failing, Silent: silent}
	ch, t0, t0Seen, err := s.followChange(ctx, w, kind, value, start, o.Timeout)
	if err != nil {
		return nil, err
	}
	end := time.Now()
	r.Phase, r.Message = ch.Phase, ch.Message
	r.Cost = cost.stop(ctx, len(s.names))
	r.TotalSeconds = end.Sub(start).Seconds()
	if !t0.IsZero() {
		r.LeadSeconds = t0.Sub(t0Seen).Seconds()
		r.T0ToEndSeconds = end.Sub(t0).Seconds()
	}
	if last := w.lastReport(); !last.IsZero() {
		if !t0Seen.IsZero() && t0Seen.Before(last) {
			last = t0Seen
		}
		r.PreconditionsSeconds = last.Sub(start).Seconds()
	}
	if err := s.countSteps(ctx, w.id(), r); err != nil {
		return nil, err
	}
	s.checkNodes(kind, value, ch, r)
	return r, nil
}

// failurePolicy is the change's spec.onFailure when faults are injected: the failing nodes
// rolled back, the others completing (nil: the default).
func failurePolicy(o Options, faulty int) *v1alpha1.FailurePolicy {
	if faulty == 0 {
		return nil
	}
	return &v1alpha1.FailurePolicy{Action: v1alpha1.FailureRollback, MaxFailedNodes: ptr.To(intOrPercent(2 * (o.FailPercent + o.SilentPercent)))}
}

// watchReports follows the nodes' reports through one watch of the API server; a silent
// node's agent stops once its report of the preconditions shows.
func (s *sim) watchReports(ctx context.Context, kind v1alpha1.ChangeKind, silent []string) (*changeWatch, func(), error) {
	wc, err := client.NewWithWatch(s.cluster.cp.Admin, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, err
	}
	silentSet := map[string]bool{}
	for _, n := range silent {
		silentSet[n] = true
	}
	w := &changeWatch{reportAt: map[string]time.Time{}, kind: kind, onReport: func(node string) {
		if silentSet[node] {
			go s.agents.silence(node) // it answered its preconditions, then went silent
		}
	}}
	wctx, stop := context.WithCancel(ctx)
	watcher, err := wc.Watch(wctx, &v1alpha1.NetshiftNodeStateList{})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("watch NetshiftNodeStates: %w", err)
	}
	go func() {
		// The API server ends a watch that falls behind (thousands of reports in a few seconds,
		// read by a process as busy as the agents'): it is listed and watched again, and a
		// report first seen in the list counts from then. A list or watch that fails on the busy
		// API server is tried again.
		for watcher != nil {
			for ev := range watcher.ResultChan() {
				if nns, ok := ev.Object.(*v1alpha1.NetshiftNodeState); ok && ev.Type != watch.Deleted {
					w.seen(nns)
				}
			}
			watcher.Stop()
			watcher = w.relist(wctx, wc)
		}
	}()
	return w, stop, nil
}

// relist lists every state (each report seen then) and watches from there,
// trying again every second until it can; nil once ctx ends.
func (w *changeWatch) relist(ctx context.Context, wc client.WithWatch) watch.Interface {
	for ctx.Err() == nil {
		var list v1alpha1.NetshiftNodeStateList
		if err := wc.List(ctx, &list); err == nil {
			for i := range list.Items {
				w.seen(&list.Items[i])
			}
			raw := &metav1.ListOptions{ResourceVersion: list.ResourceVersion}
			if watcher, err := wc.Watch(ctx, &v1alpha1.NetshiftNodeStateList{}, &client.ListOptions{Raw: raw}); err == nil {
				return watcher
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// patchNetwork asks the NetshiftNetwork for value, as a person would.
func (s *sim) patchNetwork(ctx context.Context, kind v1alpha1.ChangeKind, value int32, policy *v1alpha1.FailurePolicy) error {
	c := s.cluster.cp.Client
	var net v1alpha1.NetshiftNetwork
	if err := c.Get(ctx, client.ObjectKey{Name: networkName}, &net); err != nil {
		return err
	}
	patch := client.MergeFrom(net.DeepCopy())
	switch kind {
	case v1alpha1.ChangeMTU:
		net.Spec.MTU = ptr.To(value)
	case v1alpha1.ChangeVXLANPort:
		net.Spec.VXLANPort = value
	}
	if policy != nil {
		net.Spec.OnFailure = *policy
	}
	if err := c.Patch(ctx, &net, patch); err != nil {
		return fmt.Errorf("patch NetshiftNetwork %s: %w", networkName, err)
	}
	return nil
}

// followChange reads the NetshiftNetwork until the change to value has ended, saying where
// it stands every 5 s; it returns the change as it ended, its T0 and when T0 was first seen.
func (s *sim) followChange(ctx context.Context, w *changeWatch, kind v1alpha1.ChangeKind, value int32, start time.Time, timeout time.Duration) (
	*v1alpha1.NetworkChange, time.Time, time.Time, error) {
	var t0, t0Seen time.Time
	lastPrint := time.Now()
	for {
		var net v1alpha1.NetshiftNetwork
		if err := s.cluster.cp.Client.Get(ctx, client.ObjectKey{Name: networkName}, &net); err != nil {
			return nil, t0, t0Seen, err
		}
		ch := net.Status.Change
		if ch != nil && w.id() == "" && ch.Kind == kind && ch.To == value {
			w.setID(ch.ID)
		}
		if t0.IsZero() && w.id() != "" {
			// The operator writes T0 into the cluster's plan before it records it in the
			// change's status, which a busy API server can hold back by seconds.
			var plan v1alpha1.NetshiftChangePlan
			err := s.cluster.cp.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftChangePlanName}, &plan)
			if err == nil && plan.Spec.ID == w.id() && plan.Spec.T0 != nil {
				t0, t0Seen = plan.Spec.T0.Time, time.Now()
			}
		}
		if ch != nil && ch.ID == w.id() {
			if ch.T0 != nil && t0.IsZero() {
				t0, t0Seen = ch.T0.Time, time.Now()
			}
			if ended(ch.Phase) {
				return ch, t0, t0Seen, nil
			}
		}
		if time.Since(lastPrint) > 5*time.Second {
			lastPrint = time.Now()
			phase := v1alpha1.ChangePhase("not started")
			if ch != nil {
				phase = ch.Phase
			}
			fmt.Fprintf(s.out, "scale: %s after %s: %d of %d nodes answered\n", phase, time.Since(start).Round(time.Second), w.answered(), len(s.names))
		}
		if e := s.cluster.ended(); e != "" {
			return nil, t0, t0Seen, fmt.Errorf("during the change: %s", e)
		}
		if time.Since(start) > timeout {
			return nil, t0, t0Seen, fmt.Errorf("the change did not end in %s (phase %v)", timeout, ch)
		}
		select {
		case <-ctx.Done():
			return nil, t0, t0Seen, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countSteps reads the steps each node reported, from its state as the change left it.
func (s *sim) countSteps(ctx context.Context, id string, r *ChangeReport) error {
	var states v1alpha1.NetshiftNodeStateList
	if err := s.cluster.cp.Client.List(ctx, &states); err != nil {
		return err
	}
	var late []float64
	for _, st := range states.Items {
		rep := st.Status.LiveChange
		if rep == nil || rep.ID != id {
			continue
		}
		seen := map[v1alpha1.StepAction]bool{}
		for _, step := range rep.Steps {
			if seen[step.Action] {
				r.StepsAgain++
				continue
			}
			seen[step.Action] = true
			if step.Error == "" {
				late = append(late, float64(step.LateMicros)/1000)
				if step.LateMicros > 100_000 {
					r.StepsLate++
				}
			}
		}
	}
	r.StepsRun = len(late)
	r.StepLateMs = percentiles(late)
	return nil
}

// checkNodes counts, from the simulated nodes themselves, which carry the new value and
// whether the failing ones are back on the old.
func (s *sim) checkNodes(kind v1alpha1.ChangeKind, value int32, ch *v1alpha1.NetworkChange, r *ChangeReport) {
	named := map[string]bool{}
	for _, list := range [][]string{ch.Converging, ch.Held, ch.Rebooting} {
		for _, n := range list {
			named[n] = true
		}
	}
	if ch.Rollback != nil {
		for _, n := range ch.Rollback.Nodes {
			named[n] = true
		}
	}
	carries := func(n string) int {
		mtu, port, _ := s.nodes[n].Network()
		if kind == v1alpha1.ChangeMTU {
			return mtu
		}
		return port
	}
	for _, n := range s.names {
		if carries(n) == int(value) {
			r.Applied++
		}
	}
	for _, n := range r.Failed {
		if carries(n) == s.initial(kind) {
			r.Restored++
		}
		if named[n] || strings.Contains(r.Message, n) {
			r.Reported++
		}
	}
}

func ended(p v1alpha1.ChangePhase) bool {
	return slices.Contains([]v1alpha1.ChangePhase{v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseRolledBack, v1alpha1.PhaseAborted}, p)
}

// firstStep is the step a failing node fails: its change's first.
func firstStep(kind v1alpha1.ChangeKind) v1alpha1.StepAction {
	if kind == v1alpha1.ChangeMTU {
		return "PodMTU"
	}
	return "TunnelPort"
}

// pick chooses percent of names, spread over them (every k-th, from offset).
func pick(names []string, percent float64, offset int) []string {
	n := int(float64(len(names)) * percent / 100)
	if n == 0 {
		return nil
	}
	every := len(names) / n
	var out []string
	for i := offset; i < len(names) && len(out) < n; i += every {
		out = append(out, names[i])
	}
	return out
}

// percentiles are the 50th, 99th and 100th of v.
func percentiles(v []float64) [3]float64 {
	if len(v) == 0 {
		return [3]float64{}
	}
	sort.Float64s(v)
	at := func(q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return [3]float64{at(0.5), at(0.99), v[len(v)-1]}
}
