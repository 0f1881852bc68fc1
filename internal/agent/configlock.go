package agent

import (
	"context"
	"fmt"

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
// hundred milliseconds of the steps. A port change does not take it: a
// pod's set-up does not depend on the tunnel port.
type stepsLock struct {
	a      *Agent
	take   bool
	unlock func()
}

func (a *Agent) stepsLock(plan *v1alpha1.LiveChangePlan) *stepsLock {
	return &stepsLock{a: a, take: plan.Kind == v1alpha1.ChangeMTU}
}

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
