package agent

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/simnode"
	"netshift.io/netshift/internal/testenv"
)

// TestNoPodIsSetUpBetweenTheStepsOfAnMTUChange: while an agent runs an MTU
// change's steps, a pod's set-up (netshift-cni's shared lock on the node's
// network configuration file, taken here as netshift-cni takes it) waits
// from just before the first step to the end of the last, the
// configuration's rewrite; before and after, pods are set up as usual. A
// port change holds nothing between its steps. The steps themselves run on a
// simulated node's devices (the real ones are TestMTUStepsOnARealNodeTouchOnlyWhatTheNodeSays's).
func TestNoPodIsSetUpBetweenTheStepsOfAnMTUChange(t *testing.T) {
	testenv.Require(t, envMissing)
	for _, tc := range []struct {
		kind     v1alpha1.ChangeKind
		from, to int32
		steps    []v1alpha1.StepAction
		held     bool
	}{
		{v1alpha1.ChangeMTU, 1450, 1350, []v1alpha1.StepAction{netplugin.StepPodMTU, netplugin.StepHostVethMTU, netplugin.StepNodePortMTU, v1alpha1.StepNetworkConfig}, true},
		{v1alpha1.ChangeVXLANPort, 4789, 4790, []v1alpha1.StepAction{netplugin.StepTunnelPort, v1alpha1.StepNetworkConfig}, false},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			node := "steps-lock-" + map[bool]string{true: "mtu", false: "port"}[tc.held]
			ctx := context.Background()
			c := env.Client
			k8sNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
			if err := c.Create(ctx, k8sNode); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Delete(ctx, k8sNode) }()
			sim := simnode.New(simnode.Spec{Name: node, Pods: 3, MTU: 1450, UnderlayMTU: 9000, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789})
			config := filepath.Join(t.TempDir(), "network.json")
			defer runAgent(t, Options{Node: node, NetworkConfig: config, NewPlugin: func(nodenet.Env) (netplugin.Node, error) { return sim, nil }})()

			network := v1alpha1.NodeNetworkConfig{MTU: 1450, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}
			if tc.kind == v1alpha1.ChangeMTU {
				network.MTU = tc.to
			} else {
				network.TunnelPort = tc.to
			}
			plan := &v1alpha1.LiveChangePlan{ID: "steps-lock-1", Kind: tc.kind, From: tc.from, To: tc.to, Encapsulation: v1alpha1.EncapVXLAN,
				UnderlayMTU: 9000, TimeURL: timeServer(t), Network: &network}
			// Steps half a second apart: a window long enough that a pod set up every few
			// milliseconds falls into it unless held off, however late a loaded machine runs the first.
			for i, a := range tc.steps {
				plan.Steps = append(plan.Steps, v1alpha1.ScheduledStep{Action: a, Value: tc.to, OffsetMs: int32(i * 500)})
			}
			nns := &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NetshiftNodeStateSpec{LiveChange: plan}}
			if err := c.Create(ctx, nns); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Delete(ctx, nns) }()
			got := waitNodeState(t, node, "the plan answered", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange != nil })
			if !got.Status.LiveChange.Ready {
				t.Fatalf("preconditions: %+v", got.Status.LiveChange)
			}

			// netshift-cni: a pod set up every few milliseconds, each under the shared lock.
			var mu sync.Mutex
			var setUps []time.Time
			stop := make(chan struct{})
			var cni sync.WaitGroup
			cni.Add(1)
			go func() {
				defer cni.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(3 * time.Millisecond):
					}
					waiting, cancel := context.WithTimeout(ctx, 10*time.Second) // netshift-cni's lockTimeout is 20 s
					l, err := nodeconfig.LockShared(waiting, config)
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					setUps = append(setUps, time.Now())
					mu.Unlock()
					l.Unlock()
				}
			}()
			t0 := metav1.NewMicroTime(time.Now().Add(time.Second))
			got.Spec.LiveChange.T0 = &t0
			if err := c.Update(ctx, got); err != nil {
				t.Fatal(err)
			}
			got = waitNodeState(t, node, "the node's part done", func(s *v1alpha1.NetshiftNodeState) bool { return s.Status.LiveChange.Done })
			time.Sleep(200 * time.Millisecond)
			close(stop)
			cni.Wait()

			steps := got.Status.LiveChange.Steps
			if len(steps) != len(tc.steps) || got.Status.LiveChange.Failed {
				t.Fatalf("steps reported: %+v", got.Status.LiveChange)
			}
			first, last := steps[0].At.Time, steps[len(steps)-1].EndedAt.Time
			var before, between, after int
			for _, at := range setUps {
				switch {
				case at.Before(first):
					before++
				case at.After(last):
					after++
				default:
					between++
				}
			}
			t.Logf("pods set up: %d before the first step, %d from the first step (%s) to the end of the last (%s), %d after",
				before, between, first.Format("15:04:05.000"), last.Format("15:04:05.000"), after)
			if before == 0 || after == 0 {
				t.Fatalf("the stand-in for netshift-cni set up %d pods before the steps and %d after: it did not run through the change", before, after)
			}
			if held := between == 0; held != tc.held {
				t.Errorf("%s change: %d pods set up between the first step and the end of the last; want them held off: %v", tc.kind, between, tc.held)
			}
			if podMTU, _, _ := sim.Network(); tc.held && podMTU != int(tc.to) {
				t.Errorf("after the change the node's pods carry MTU %d, want %d", podMTU, tc.to)
			}
			if f, err := nodeconfig.Read(config); err != nil || f.NodeNetworkConfig != network {
				t.Errorf("the node's network configuration after the change: %+v, %v; want %+v", f, err, network)
			}
		})
	}
}

// TestTheLockIsHeldAcrossShortMTUStepsOnly: an MTU change's steps are held
// across when they span at most maxStepsLockSpan; a long --step-spacing, and
// a port change, take the lock step by step.
func TestTheLockIsHeldAcrossShortMTUStepsOnly(t *testing.T) {
	plan := func(kind v1alpha1.ChangeKind, spacingMs int32) *v1alpha1.LiveChangePlan {
		p := &v1alpha1.LiveChangePlan{Kind: kind}
		for i, a := range []v1alpha1.StepAction{netplugin.StepPodMTU, netplugin.StepHostVethMTU, netplugin.StepNodePortMTU, v1alpha1.StepNetworkConfig} {
			p.Steps = append(p.Steps, v1alpha1.ScheduledStep{Action: a, OffsetMs: int32(i) * spacingMs})
		}
		return p
	}
	a := &Agent{}
	for _, c := range []struct {
		plan *v1alpha1.LiveChangePlan
		want bool
	}{
		{plan(v1alpha1.ChangeMTU, 100), true},
		{plan(v1alpha1.ChangeMTU, 1666), true}, // 4.998 s
		{plan(v1alpha1.ChangeMTU, 1667), false},
		{plan(v1alpha1.ChangeMTU, 10000), false},
		{plan(v1alpha1.ChangeVXLANPort, 100), false},
		{plan(v1alpha1.ChangeGenevePort, 100), false},
		{&v1alpha1.LiveChangePlan{Kind: v1alpha1.ChangeMTU, Steps: []v1alpha1.ScheduledStep{{Action: v1alpha1.StepNetworkConfig, OffsetMs: 300}}}, true},
	} {
		if got := a.stepsLock(c.plan).take; got != c.want {
			t.Errorf("%s over %s: held across the steps %v, want %v", c.plan.Kind, stepsSpan(c.plan.Steps), got, c.want)
		}
	}
}
