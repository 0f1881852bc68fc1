package agent

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/nodeconfig"
)

// rebootNode is the Reboot operation's work, run once the drain controller
// has drained the node under its pool's limit: it writes the operation's
// network into the node's configuration, records the boot it reboots from,
// reboots, and checks the node carries the network once it is back. The
// agent that comes back on another boot only checks; one that restarted on
// the same boot (it died before the reboot) reboots again.
func (a *Agent) rebootNode(ctx context.Context, _ string, op v1alpha1.NodeOperation) error {
	logger := log.FromContext(ctx).WithValues("node", a.Node, "operation", op.ID)
	if op.Network == nil {
		return fmt.Errorf("operation %s names no network to reboot the node into", op.ID)
	}
	var nns v1alpha1.NetshiftNodeState
	if err := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &nns); err != nil {
		return err
	}
	boot, err := a.host().BootID()
	if err != nil {
		return err
	}
	if from := nns.Status.RebootFromBoot; nns.Status.SyncOperation == op.ID && from != "" && from != boot {
		logger.Info("the node rebooted; checking it", "from", from, "now", boot)
		return a.checkAfterReboot(ctx, op)
	}
	if a.Reboot == nil {
		return fmt.Errorf("this agent cannot reboot its node (it runs without --reboot-command)")
	}
	if a.config() != nil {
		if err := a.writeNetworkConfig(ctx, *op.Network, op.ID); err != nil {
			return err
		}
	}
	if nns.Status.RebootFromBoot != boot {
		if err := a.reportDone(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) { s.RebootFromBoot = boot }); err != nil {
			return err
		}
	}
	logger.Info("rebooting the node", "boot", boot, "mtu", op.Network.MTU, "tunnelPort", op.Network.TunnelPort)
	rebootErr := a.Reboot(ctx, a.Node, op.ID)
	// `systemctl reboot` returns as soon as the shutdown is queued, and a command killed by the
	// shutdown fails: either way the node may be going down. The agent waits to be ended with
	// it, or to see the boot ID change (a node whose reboot leaves this process running).
	wait := rebootWait
	if rebootErr != nil {
		wait = rebootFailWait
	}
	if rebooted, err := a.awaitReboot(ctx, boot, wait); err != nil {
		return err // this process ends with the node: the agent that comes back checks
	} else if !rebooted && rebootErr != nil {
		return fmt.Errorf("reboot: %w", rebootErr)
	} else if !rebooted {
		return fmt.Errorf("the reboot command returned, but the node still runs boot %s after %s", boot, wait)
	}
	return a.checkAfterReboot(ctx, op)
}

// rebootWait bounds how long the agent waits for its node to go down after
// the reboot command returned; rebootFailWait, after it failed.
const (
	rebootWait     = 10 * time.Minute
	rebootFailWait = 30 * time.Second
)

// awaitReboot waits up to d for the node's boot ID to differ from boot, or
// for ctx to end (the node going down ends this process).
func (a *Agent) awaitReboot(ctx context.Context, boot string, d time.Duration) (bool, error) {
	deadline := time.After(d)
	for {
		if now, err := a.host().BootID(); err == nil && now != boot {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline:
			return false, nil
		case <-time.After(time.Second):
		}
	}
}

// writeNetworkConfig writes the node's network configuration under its lock.
func (a *Agent) writeNetworkConfig(ctx context.Context, network v1alpha1.NodeNetworkConfig, by string) error {
	c := a.config()
	if c == nil {
		return nil
	}
	unlock, err := a.lockConfig(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.Write(nodeconfig.File{NodeNetworkConfig: network, Change: by}); err != nil {
		return fmt.Errorf("node %s: %w", a.Node, err)
	}
	return nil
}

// checkAfterReboot aligns the pods that came back before netshift-cni was
// chained again, then checks every interface, the tunnels and the
// configuration carry the operation's network.
func (a *Agent) checkAfterReboot(ctx context.Context, op v1alpha1.NodeOperation) error {
	mtu := op.Network.MTU
	if a.config() != nil {
		if err := a.alignAfterBoot(ctx, int(mtu)); err != nil {
			return fmt.Errorf("align the pods to MTU %d after the reboot: %w", mtu, err)
		}
	}
	// A node that just came up may not have every pod and port back yet: the check is taken
	// again until it passes or checkAfterRebootFor has passed.
	var err error
	for deadline := time.Now().Add(checkAfterRebootFor); ; {
		if err = a.carries(ctx, *op.Network); err == nil || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	if err != nil {
		return fmt.Errorf("after the reboot the node does not carry MTU %d, port %d: %w", mtu, op.Network.TunnelPort, err)
	}
	return nil
}

// checkAfterRebootFor is how long a node that came back may take to carry
// the operation's network before its check fails.
const checkAfterRebootFor = 2 * time.Minute
