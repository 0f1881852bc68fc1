package agent

import (
	"context"
	"fmt"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

// lockConfig holds the node's network configuration exclusively (when the
// node has one): netshift-cni sets up no pod while an MTU step or the
// configuration's rewrite runs, so every pod is either set up before (and
// listed by the step) or after (and reads what the step left). unlock is
// never nil. Under a stepsLock that holds it already (ctx says so), it
// takes nothing: the flock is per open file, so taking it again would wait
// for itself.
func (a *Agent) lockConfig(ctx context.Context) (unlock func(), err error) {
	c := a.config()
	if c == nil || ctx.Value(configHeld{}) == a {
		return func() {}, nil
	}
	unlock, err = c.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.Node, err)
	}
	return unlock, nil
}

// lockPods is lockConfig as a network plugin's driver takes it (nodenet.Env.LockPods).
func (a *Agent) lockPods(ctx context.Context) (func(), error) { return a.lockConfig(ctx) }

// configHeld marks a context whose steps run under the agent's stepsLock.
type configHeld struct{}

// stepsLock holds the node's network configuration across all of an MTU
// change's steps on the node, from just before the first to the end of the
// last (the configuration's rewrite, which aligns the pods set up before
// it). A pod is then set up either before the first step, and every step
// finds it, or after the last, and reads the new MTU: none is set up with
// the old MTU on a path already changed. This is what a cordon of every node
// did before, at two API writes a node and no guarantee for the pods
// already scheduled; netshift-cni's set-ups wait instead, for the few
// hundred milliseconds of the steps. Steps spread over more than
// maxStepsLockSpan (a long --step-spacing) take the lock one step at a
// time, as a port change's do: a pod's set-up must not wait near
// netshift-cni's lockTimeout, and a pod set up between them is aligned by
// the configuration's rewrite.
type stepsLock struct {
	a      *Agent
	take   bool
	unlock func()
}

// maxStepsLockSpan is the longest span of an MTU change's steps that the
// agent holds the configuration across: a quarter of netshift-cni's default
// lockTimeout (20 s), which a late step or a slow last one adds to.
const maxStepsLockSpan = 5 * time.Second

func (a *Agent) stepsLock(plan *v1alpha1.LiveChangePlan) *stepsLock {
	return &stepsLock{a: a, take: plan.Kind == v1alpha1.ChangeMTU && stepsSpan(plan.Steps) <= maxStepsLockSpan}
}

// stepsSpan is the time from a plan's first step to its last.
func stepsSpan(steps []v1alpha1.ScheduledStep) time.Duration {
	if len(steps) == 0 {
		return 0
	}
	first, last := steps[0].OffsetMs, steps[0].OffsetMs
	for _, s := range steps {
		first, last = min(first, s.OffsetMs), max(last, s.OffsetMs)
	}
	return time.Duration(last-first) * time.Millisecond
}

// holding says whether the lock is held now.
func (s *stepsLock) holding() bool { return s.unlock != nil }

// hold takes the lock if it is not held yet and returns ctx marked as
// holding it, for the step about to run.
func (s *stepsLock) hold(ctx context.Context) (context.Context, error) {
	if !s.take {
		return ctx, nil
	}
	if s.unlock == nil {
		unlock, err := s.a.lockConfig(ctx)
		if err != nil {
			return ctx, err
		}
		s.unlock = unlock
	}
	return context.WithValue(ctx, configHeld{}, s.a), nil
}

// release gives the lock back (once the node's steps ended, or stopped).
func (s *stepsLock) release() {
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}
