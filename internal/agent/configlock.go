package agent

import (
	"context"
	"fmt"
)

// lockConfig holds the node's network configuration exclusively (when the
// node has one): netshift-cni sets up no pod while an MTU step or the
// configuration's rewrite runs, so every pod is either set up before (and
// listed by the step) or after (and reads what the step left). unlock is
// never nil.
func (a *Agent) lockConfig(ctx context.Context) (unlock func(), err error) {
	c := a.config()
	if c == nil {
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
