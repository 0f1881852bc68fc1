package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/ovs"
)

// liveChange runs the node's part of a live change: preconditions first
// (touching nothing), then, once the operator has set T0, every step at its
// offset from T0. It reports after the preconditions and after each step.
func (a *Agent) liveChange(ctx context.Context, nns *v1alpha1.NetshiftNodeState) (ctrl.Result, error) {
	plan := nns.Spec.LiveChange
	rep := nns.Status.LiveChange
	logger := log.FromContext(ctx).WithValues("node", a.Node, "change", plan.ID)
	if (rep == nil || rep.ID != plan.ID) && plan.Rollback {
		// A rollback puts back the values the node had: nothing to check first.
		logger.Info("rolling back the change's steps", "t0", plan.T0)
		return ctrl.Result{}, a.report(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.LiveChange = &v1alpha1.LiveChangeReport{ID: plan.ID, Ready: true}
		})
	}
	if rep == nil || rep.ID != plan.ID {
		checking, withdrawn := a.whilePlanned(ctx, nns, plan.ID)
		r := a.preconditions(checking, plan)
		if withdrawn() {
			logger.Info("plan withdrawn while its preconditions were checked; not answering it")
			return ctrl.Result{}, nil
		}
		logger.Info("preconditions checked", "ready", r.Ready, "problems", r.Problems, "warnings", r.Warnings)
		return ctrl.Result{}, a.report(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) { s.LiveChange = &r })
	}
	// A node whose step failed is left as its steps left it, for the operator to roll back.
	if rep.Done && !rep.Failed && plan.Network != nil && a.NetworkConfig != "" && !a.settled[plan.ID] {
		return a.settle(ctx, plan)
	}
	if plan.T0 == nil || rep.Done || !rep.Ready {
		return ctrl.Result{}, nil
	}
	done := map[v1alpha1.StepAction]bool{}
	for _, s := range rep.Steps {
		done[s.Action] = true // a restarted agent does not repeat a step it reported
	}
	// Steps close together are reported together, after the last of them: a
	// report is a write that every watcher of the node's state answers, and
	// the CPU that costs is taken from the datapaths in the very moments the
	// change must not disturb. A failed step ends the node's part at once: the
	// steps after it are not run, and the operator decides what follows
	// (spec.onFailure), for this node and the others.
	var unreported []v1alpha1.StepResult
	for i, step := range plan.Steps {
		if done[step.Action] {
			continue
		}
		res, withdrawn, err := a.stepAtItsTime(ctx, nns, plan, step)
		if err != nil || withdrawn {
			return ctrl.Result{}, errors.Join(err, a.reportSteps(ctx, nns, plan.ID, unreported, false))
		}
		unreported = append(unreported, res)
		if res.Error != "" {
			logger.Info("a step failed; the steps after it are not run", "step", step.Action)
			return ctrl.Result{}, a.reportSteps(ctx, nns, plan.ID, unreported, true)
		}
		if next := nextStepAfter(plan, i, done); next != nil && next.Sub(a.now()) > reportBatchWindow {
			if err := a.reportSteps(ctx, nns, plan.ID, unreported, false); err != nil {
				return ctrl.Result{}, err
			}
			unreported = nil
		}
	}
	a.doneAt[plan.ID] = a.now()
	return ctrl.Result{RequeueAfter: settleDelay}, a.reportSteps(ctx, nns, plan.ID, unreported, true)
}

// reportBatchWindow is how far the next step may be for the steps run so far
// to wait for it before they are reported.
const reportBatchWindow = time.Second

// nextStepAfter is the time of the first step after the i-th that is still
// to run, or nil when there is none.
func nextStepAfter(plan *v1alpha1.LiveChangePlan, i int, done map[v1alpha1.StepAction]bool) *time.Time {
	for _, s := range plan.Steps[i+1:] {
		if !done[s.Action] {
			at := plan.T0.Add(time.Duration(s.OffsetMs) * time.Millisecond)
			return &at
		}
	}
	return nil
}

// reportSteps reports step results in one write, and the node's part of the
// change done when done is set. A failed step marks the change failed.
func (a *Agent) reportSteps(ctx context.Context, nns *v1alpha1.NetshiftNodeState, id string, results []v1alpha1.StepResult, done bool) error {
	if len(results) == 0 && !done {
		return nil
	}
	return a.reportDone(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
		if s.LiveChange == nil || s.LiveChange.ID != id {
			return // the report was replaced meanwhile: nothing of this change to add to
		}
		s.LiveChange.Steps = append(s.LiveChange.Steps, results...)
		for _, r := range results {
			if r.Error != "" {
				s.LiveChange.Failed = true
			}
		}
		if done {
			s.LiveChange.Done = true
		}
	})
}

// whilePlanned is ctx, cancelled once the node's plan is no longer change id
// (withdrawn, or replaced by a new attempt): the preconditions can wait long
// for an operator that restarts, and a withdrawn plan must not hold the
// agent from the next one. withdrawn ends the watch and says whether it
// was withdrawn.
func (a *Agent) whilePlanned(ctx context.Context, nns *v1alpha1.NetshiftNodeState, id string) (watched context.Context, withdrawn func() bool) {
	watched, cancel := context.WithCancel(ctx)
	var gone atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-watched.Done():
				return
			case <-time.After(planLookInterval):
			}
			var fresh v1alpha1.NetshiftNodeState
			err := a.Client.Get(watched, client.ObjectKeyFromObject(nns), &fresh)
			if (err == nil && (fresh.Spec.LiveChange == nil || fresh.Spec.LiveChange.ID != id)) || apierrors.IsNotFound(err) {
				gone.Store(true)
				cancel()
				return
			}
		}
	}()
	return watched, func() bool {
		cancel()
		<-done
		return gone.Load()
	}
}

// planLookInterval is how often a long precondition check looks whether its
// plan is still wanted (from the agent's cache: no request to the API server).
const planLookInterval = time.Second

// stepAtItsTime waits for the step's time and runs it, unless the plan was
// withdrawn meanwhile (an abort before T0). Everything the step needs is
// built before its time, so that at its time it only sends (one OVSDB
// transaction for the tunnel port, netlink requests on open handles).
func (a *Agent) stepAtItsTime(ctx context.Context, nns *v1alpha1.NetshiftNodeState, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (res v1alpha1.StepResult, withdrawn bool, err error) {
	logger := log.FromContext(ctx).WithValues("node", a.Node, "change", plan.ID)
	at := plan.T0.Add(time.Duration(step.OffsetMs) * time.Millisecond)
	armed := a.armStep(ctx, plan, step)
	defer armed.release()
	askShortSlices()
	if err := a.untilFinalApproach(ctx, at); err != nil {
		return res, false, err
	}
	// The last look at the plan, from the cache, before the final approach:
	// a plan withdrawn later than this runs its step (the operator refuses an abort so close to T0).
	var fresh v1alpha1.NetshiftNodeState
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(nns), &fresh); err != nil {
		return res, false, fmt.Errorf("node %s: read the plan before step %s: %w", a.Node, step.Action, err)
	}
	if fresh.Spec.LiveChange == nil || fresh.Spec.LiveChange.ID != plan.ID || fresh.Spec.LiveChange.T0 == nil || !fresh.Spec.LiveChange.T0.Equal(plan.T0) {
		logger.Info("plan withdrawn before its step; stopping", "step", step.Action)
		return res, true, nil
	}
	began, ended, outcome, priority, err := a.onTime(ctx, at, armed.fire)
	if began.IsZero() {
		return res, false, fmt.Errorf("node %s: wait for step %s: %w", a.Node, step.Action, err)
	}
	res = stepResult(step, at, began, ended, outcome)
	if err != nil {
		res.Error = err.Error()
		logger.Error(err, "step failed", "step", step.Action)
	} else {
		logger.Info("step done", "step", step.Action, "value", step.Value, "lateMicros", res.LateMicros, "tookMs", res.TookMs, "waitedMicros", res.WaitedMicros,
			"changed", res.Changed, "skipped", outcome.skipped, "priority", priority)
	}
	return res, false, nil
}

// stepResult is the report of a step scheduled at at, run from began to ended.
func stepResult(step v1alpha1.ScheduledStep, at, began, ended time.Time, o stepOutcome) v1alpha1.StepResult {
	res := v1alpha1.StepResult{Action: step.Action, At: metav1.NewMicroTime(began),
		ScheduledAt: ptr.To(metav1.NewMicroTime(at)), EndedAt: ptr.To(metav1.NewMicroTime(ended)),
		LateMicros: began.Sub(at).Microseconds(), LateMs: int32(began.Sub(at).Milliseconds()), TookMs: int32(ended.Sub(began).Milliseconds()),
		WaitedMicros: o.waited.Microseconds(), Changed: int32(o.changed), Skipped: o.report()}
	if !o.committed.IsZero() {
		res.CommittedAt = ptr.To(metav1.NewMicroTime(o.committed))
	}
	return res
}

// armedStep is a step made ready before its time: fire runs it, release
// frees what was opened for it (whether it ran or not).
type armedStep struct {
	fire    func(context.Context) (stepOutcome, error)
	release func()
}

// armStep prepares a step. The tunnel port's transaction is built now, from
// the switch's cache, and the MTU steps' namespaces are entered now; a step
// that cannot be prepared (or needs nothing prepared) runs whole at its time.
func (a *Agent) armStep(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) armedStep {
	whole := armedStep{fire: func(ctx context.Context) (stepOutcome, error) { return a.runStep(ctx, plan, step) }, release: func() {}}
	switch {
	case a.failSteps[step.Action] > 0:
		return whole
	case step.Action == v1alpha1.StepPodMTU || step.Action == v1alpha1.StepHostVethMTU:
		// The namespaces the step will enter are entered now: the node's and
		// each pod's known now (a pod set up meanwhile gets a handle at the step).
		hs := newNetnsHandles()
		if _, err := hs.get(a.NodeNetns); err != nil {
			hs.close()
			return whole
		}
		if step.Action == v1alpha1.StepPodMTU {
			if pods, _, err := a.Pods.PodNetworks(ctx); err == nil {
				for _, p := range pods {
					_, _ = hs.get(p.Netns) // a pod gone meanwhile is the step's to skip
				}
			}
		}
		return armedStep{fire: func(ctx context.Context) (stepOutcome, error) {
			return a.runStep(withHandles(ctx, hs), plan, step)
		}, release: hs.close}
	case step.Action != v1alpha1.StepTunnelPort || a.Switch == nil:
		return whole
	}
	if a.TunnelPortPath != nil && a.TunnelPortPath.Use(ctx) {
		return armedStep{fire: func(ctx context.Context) (stepOutcome, error) {
			n, err := a.TunnelPortPath.Set(ctx, string(plan.Encapsulation), int(step.Value))
			return stepOutcome{changed: n, committed: a.now()}, err
		}, release: func() {}}
	}
	prepared, err := a.Switch.PrepareTunnelPort(ctx, string(plan.Encapsulation), int(step.Value))
	if err != nil {
		log.FromContext(ctx).Info("could not prepare the tunnel port step; it runs whole at its time", "node", a.Node, "error", err.Error())
		return whole
	}
	// The transaction's own connection: at its time the step's thread sends it
	// and is the one woken by the reply.
	if err := prepared.Arm(ctx); err != nil {
		log.FromContext(ctx).Info("could not open the tunnel port step's own OVSDB connection; it is sent through the agent's", "node", a.Node, "error", err.Error())
	}
	return armedStep{fire: func(ctx context.Context) (stepOutcome, error) {
		err := prepared.Commit(ctx)
		if err != nil {
			err = fmt.Errorf("node %s: %w", a.Node, err)
		}
		return stepOutcome{changed: len(prepared.Names), committed: prepared.Committed}, err
	}, release: prepared.Release}
}

// settleDelay is how long after its last step the agent aligns the node's
// pods once more. The runtime lists a sandbox only once its container runs,
// tens of milliseconds after netshift-cni set it up: a pod set up with the old
// configuration just before the rewrite can be missing from the step's list.
const settleDelay = 2 * time.Second

// settle aligns, once, the pods the change's last step could not see yet.
func (a *Agent) settle(ctx context.Context, plan *v1alpha1.LiveChangePlan) (ctrl.Result, error) {
	if at, ok := a.doneAt[plan.ID]; ok {
		if wait := settleDelay - a.now().Sub(at); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	lock, err := a.lockConfig(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer lock.Unlock()
	o, err := a.alignPods(ctx, int(plan.Network.MTU))
	if err != nil {
		return ctrl.Result{}, err
	}
	a.settled[plan.ID] = true
	log.FromContext(ctx).Info("pods aligned after the change", "node", a.Node, "change", plan.ID, "changed", o.changed, "skipped", o.skipped)
	return ctrl.Result{}, nil
}

// alignAfterBoot aligns the node's pods to mtu under the configuration's lock.
func (a *Agent) alignAfterBoot(ctx context.Context, mtu int) error {
	lock, err := a.lockConfig(ctx)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	_, err = a.alignPods(ctx, mtu)
	return err
}

// check reads back what the plan set: every interface's MTU, or the tunnels' port.
func (a *Agent) check(ctx context.Context, plan *v1alpha1.LiveChangePlan) error {
	for _, step := range plan.Steps {
		switch step.Action {
		case v1alpha1.StepPodMTU:
			if err := a.checkPodMTU(ctx, int(step.Value)); err != nil {
				return err
			}
		case v1alpha1.StepHostVethMTU:
			if err := a.checkHostVethMTU(ctx, int(step.Value)); err != nil {
				return err
			}
		case v1alpha1.StepNetworkConfig:
			if a.NetworkConfig == "" || plan.Network == nil {
				continue
			}
			f, err := nodeconfig.Read(a.NetworkConfig)
			if err != nil {
				return err
			}
			if f.NodeNetworkConfig != *plan.Network {
				return fmt.Errorf("%s holds %+v, want %+v", a.NetworkConfig, f.NodeNetworkConfig, *plan.Network)
			}
		case v1alpha1.StepTunnelPort:
			sw, err := a.ovsdb()
			if err != nil {
				return err
			}
			tunnels, err := sw.Tunnels(ctx)
			if err != nil {
				return err
			}
			for _, t := range tunnels {
				if t.Type == string(plan.Encapsulation) && t.DstPort != int(step.Value) {
					return fmt.Errorf("tunnel %s has port %d, want %d", t.Name, t.DstPort, step.Value)
				}
			}
		}
	}
	return nil
}

// runStep carries out one step. Every step is idempotent.
func (a *Agent) runStep(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (stepOutcome, error) {
	if a.failSteps[step.Action] > 0 {
		a.failSteps[step.Action]--
		return stepOutcome{}, fmt.Errorf("node %s: %s failed on purpose (a test's fault injection)", a.Node, step.Action)
	}
	switch step.Action {
	case v1alpha1.StepPodMTU:
		lock, err := a.lockConfig(ctx)
		if err != nil {
			return stepOutcome{}, err
		}
		defer lock.Unlock()
		return a.setPodMTU(ctx, int(step.Value))
	case v1alpha1.StepHostVethMTU:
		return a.setHostVethMTU(ctx, int(step.Value))
	case v1alpha1.StepNodePortMTU:
		return a.setNodePortMTU(ctx, int(step.Value))
	case v1alpha1.StepTunnelPort:
		sw, err := a.ovsdb()
		if err != nil {
			return stepOutcome{}, err
		}
		prepared, err := sw.PrepareTunnelPort(ctx, string(plan.Encapsulation), int(step.Value))
		if err != nil {
			return stepOutcome{}, err
		}
		err = prepared.Commit(ctx)
		return stepOutcome{changed: len(prepared.Names), committed: prepared.Committed}, err
	case v1alpha1.StepNetworkConfig:
		if plan.Network == nil {
			return stepOutcome{}, fmt.Errorf("node %s: the plan of %s carries no network to write", a.Node, plan.ID)
		}
		if a.NetworkConfig == "" {
			// Nothing on this node reads one (no --network-config): the step has nothing to do.
			return stepOutcome{}, nil
		}
		lock, err := a.lockConfig(ctx)
		if err != nil {
			return stepOutcome{}, err
		}
		defer lock.Unlock()
		if err := nodeconfig.Write(a.NetworkConfig, nodeconfig.File{NodeNetworkConfig: *plan.Network, Change: plan.ID}); err != nil {
			return stepOutcome{}, fmt.Errorf("node %s: %w", a.Node, err)
		}
		if plan.Kind != v1alpha1.ChangeMTU {
			return stepOutcome{}, nil // a port change leaves the pods' MTU as it was
		}
		// Pods set up between the MTU steps read the old configuration: give them the new one.
		return a.alignPods(ctx, int(plan.Network.MTU))
	}
	return stepOutcome{}, fmt.Errorf("unknown step %q", step.Action)
}

// ovsdb is the node's switch, opened at the agent's start.
func (a *Agent) ovsdb() (*ovs.Switch, error) {
	if a.Switch == nil {
		return nil, fmt.Errorf("node %s: the agent has no OVSDB (--ovsdb)", a.Node)
	}
	return a.Switch, nil
}

// preconditions checks, touching nothing, that the node can take the change.
func (a *Agent) preconditions(ctx context.Context, plan *v1alpha1.LiveChangePlan) v1alpha1.LiveChangeReport {
	r := v1alpha1.LiveChangeReport{ID: plan.ID}
	a.checkClock(ctx, &r, plan.TimeURL)
	if a.Switch != nil {
		if err := a.Switch.Reachable(ctx); err != nil {
			r.Problems = append(r.Problems, "OVS is not reachable: "+err.Error())
		}
	}
	switch plan.Kind {
	case v1alpha1.ChangeMTU:
		if pods, _, err := a.Pods.PodNetworks(ctx); err != nil {
			r.Problems = append(r.Problems, "cannot list the node's pods: "+err.Error())
		} else {
			r.WouldChange = append(r.WouldChange, fmt.Sprintf("%d pods' eth0 and their node ends: MTU %d -> %d", len(pods), plan.From, plan.To))
		}
		if a.Switch != nil {
			r.WouldChange = append(r.WouldChange, fmt.Sprintf("the node's own ports on %s: MTU %d -> %d", a.bridge(), plan.From, plan.To))
		}
		switch problem, unchecked := a.underlayFits(ctx, plan); {
		case problem != "":
			r.Problems = append(r.Problems, problem)
		case unchecked != "":
			r.Warnings = append(r.Warnings, unchecked)
		}
	case v1alpha1.ChangeVXLANPort, v1alpha1.ChangeGenevePort:
		// What the steps would change, for a person to read: a node whose tunnels are not in its
		// OVS (OVN's, changed in the southbound database) has none of its own to list.
		if tunnels, err := a.tunnelsOf(ctx, plan.Encapsulation); err != nil {
			r.Warnings = append(r.Warnings, "the node's tunnels were not listed: "+err.Error())
		} else if a.Switch != nil {
			r.WouldChange = append(r.WouldChange, fmt.Sprintf("%d %s tunnels (%s): port %d -> %d", len(tunnels), plan.Encapsulation,
				clipList(tunnels, 4), plan.From, plan.To))
		}
		if owner, err := udpPortUser(a.NodeNetns, int(plan.To)); err != nil {
			r.Problems = append(r.Problems, "cannot check UDP port use: "+err.Error())
		} else if owner != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("UDP port %d is in use on the node by %s", plan.To, owner))
		}
	}
	if a.NetworkConfig != "" {
		r.WouldChange = append(r.WouldChange, "the node's network configuration for new pods: "+a.NetworkConfig)
	}
	r.Ready = len(r.Problems) == 0
	return r
}

// tunnelsOf names the node's tunnel interfaces of an encapsulation.
func (a *Agent) tunnelsOf(ctx context.Context, encap v1alpha1.Encapsulation) ([]string, error) {
	if a.Switch == nil {
		return nil, nil
	}
	all, err := a.Switch.Tunnels(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range all {
		if t.Type == string(encap) {
			names = append(names, t.Name)
		}
	}
	return names, nil
}

// clipList shows at most n names and how many more there are.
func clipList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// bridge is the integration bridge the node's own pod-network ports are on.
func (a *Agent) bridge() string {
	if a.IntegrationBridge == "" {
		return "br-int"
	}
	return a.IntegrationBridge
}

// underlayFits says why the plan's MTU does not fit the node's underlay
// (problem), or why it could not be checked (unchecked: a warning, since a
// node whose underlay cannot be found is no reason to stop a change).
func (a *Agent) underlayFits(ctx context.Context, plan *v1alpha1.LiveChangePlan) (problem, unchecked string) {
	link, err := a.underlayInterface(ctx)
	if err != nil {
		return "", "the underlay's MTU was not checked: " + err.Error()
	}
	mtu, err := linkMTU(a.NodeNetns, link)
	if err != nil {
		return "underlay: " + err.Error(), ""
	}
	need := int(plan.To) + int(plan.Encapsulation.Overhead())
	if mtu >= need {
		return "", ""
	}
	declared := ""
	if plan.UnderlayMTU > 0 && int(plan.UnderlayMTU) > mtu {
		declared = fmt.Sprintf(" (NetshiftNetwork spec.underlay.mtu says %d: this node's is smaller)", plan.UnderlayMTU)
	}
	return fmt.Sprintf("MTU %d does not fit the underlay: %s has MTU %d, and %d + %d bytes of %s overhead = %d%s",
		plan.To, link, mtu, plan.To, plan.Encapsulation.Overhead(), plan.Encapsulation, need, declared), ""
}

// linkMTU reads a link's MTU in a network namespace ("": this process's own).
func linkMTU(netns, link string) (int, error) {
	h, err := netdev.Open(netns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	return h.MTU(link)
}

// udpPortUser says which socket holds a UDP port in the node's namespace
// ("" when free), from the kernel's socket tables.
func udpPortUser(netns string, port int) (string, error) {
	var found string
	err := netdev.InNetns(netns, func() error {
		for _, table := range []string{"/proc/thread-self/net/udp", "/proc/thread-self/net/udp6"} {
			data, err := os.ReadFile(table)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(data), "\n")[1:] {
				f := strings.Fields(line)
				if len(f) < 10 {
					continue
				}
				local := f[1]
				hexPort := local[strings.LastIndexByte(local, ':')+1:]
				if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
					found = fmt.Sprintf("a socket bound to %s (inode %s)", local, f[9])
					return nil
				}
			}
		}
		return nil
	})
	return found, err
}

// clockRetryFor is how long the clock check keeps taking rounds from a time
// endpoint too slow to give a conclusive measurement.
const clockRetryFor = 25 * time.Second

// clockWaitFor is how long it waits for a time endpoint that does not answer
// at all: an operator that died serves again only once its lease expired
// (15 s) and the kubelet restarted it, or another node started it, which on a
// loaded 2-core node took 24 s. Waiting costs the change nothing: a new
// leader counts a silent agent's deadline from its own start.
const clockWaitFor = 90 * time.Second

// checkClock measures the node clock's offset from the operator's: T0 is one
// instant on every node only if their clocks agree within MaxClockSkew.
//
// The endpoint is the agent's own --operator-time-url, or else the one the
// elected operator advertises in the plan.
func (a *Agent) checkClock(ctx context.Context, r *v1alpha1.LiveChangeReport, advertised string) {
	if synced, err := kernelClockSynced(); err == nil && !synced {
		r.Warnings = append(r.Warnings, "the kernel reports its clock as not synchronized (NTP)")
	}
	timeURL := a.OperatorTimeURL
	if timeURL == "" {
		timeURL = advertised
	}
	if timeURL == "" {
		r.Warnings = append(r.Warnings, "clock not checked against the operator's (no --operator-time-url, and the operator advertises no time endpoint)")
		return
	}
	// The endpoint is the leader's: right after an operator restart it is down until the new
	// leader is elected (a lease term), so an unreachable endpoint is tried again before it
	// counts as a problem. Every agent checks at once when a plan arrives, so on a busy
	// control plane the first round trips can be too slow to tell: more rounds are taken,
	// spread out, and the fastest round trip of all of them is trusted.
	var samples []ClockSample
	var lastErr error
	start := time.Now()
	for {
		round, err := measureClock(ctx, timeURL, 5, a.now)
		lastErr = err
		samples = append(samples, round...)
		if len(samples) > 0 {
			offset, bound, err := EstimateOffset(samples)
			if err != nil {
				r.Problems = append(r.Problems, "cannot check the clock: "+err.Error())
				return
			}
			if judgeClock(offset, bound, a.MaxClockSkew) != clockInconclusive {
				break
			}
		}
		waited := time.Since(start)
		if (len(samples) > 0 && waited >= clockRetryFor) || waited >= clockWaitFor || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(clockRetryPause()):
		case <-ctx.Done():
		}
	}
	if len(samples) == 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("cannot check the clock (no answer for %s): %v", clockWaitFor, lastErr))
		return
	}
	offset, bound, _ := EstimateOffset(samples)
	us := offset.Microseconds()
	r.ClockOffsetMicros = &us
	switch judgeClock(offset, bound, a.MaxClockSkew) {
	case clockOff:
		r.Problems = append(r.Problems, fmt.Sprintf("the node's clock differs from the operator's by %s (± %s), more than the %s allowed: T0 would not be the same instant here",
			offset.Round(time.Microsecond), bound.Round(time.Microsecond), a.MaxClockSkew))
	case clockInconclusive:
		r.Problems = append(r.Problems, fmt.Sprintf("the node's clock differs from the operator's by %s (± %s): the round trips to the operator's time endpoint stayed too slow for %s to tell whether it is within the %s allowed",
			offset.Round(time.Microsecond), bound.Round(time.Microsecond), clockRetryFor, a.MaxClockSkew))
	}
}

// clockRetryPause spreads the agents' further rounds apart (0.2 to 1 s).
func clockRetryPause() time.Duration {
	return 200*time.Millisecond + rand.N(800*time.Millisecond)
}
