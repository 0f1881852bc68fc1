package agent

import (
	"context"
	"fmt"

	"netshift.io/netshift/internal/nodeconfig"
)

// lockConfig holds the node's network configuration exclusively (when the
// node has one): netshift-cni sets up no pod while an MTU step or the
// configuration's rewrite runs, so every pod is either set up before (and
// listed by the step) or after (and reads what the step left).
func (a *Agent) lockConfig(ctx context.Context) (*nodeconfig.Lock, error) {
	if a.NetworkConfig == "" {
		return nil, nil
	}
	l, err := nodeconfig.LockExclusive(ctx, a.NetworkConfig)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.Node, err)
	}
	return l, nil
}

// lockPods is lockConfig as a network plugin's driver takes it (nodenet.Env.LockPods).
func (a *Agent) lockPods(ctx context.Context) (func(), error) {
	l, err := a.lockConfig(ctx)
	if err != nil {
		return nil, err
	}
	return func() { l.Unlock() }, nil
}
