package agent

import (
	"context"
	"errors"
	"time"

	"github.com/vishvananda/netlink"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
)

// leaveToCNI is how long a gone pod's port is left to netshift-cni's DEL
// (plug.UnplugDeferral); exists says the pod is still there, terminating.
func (pp *portPlugger) leaveToCNI(owner, portID string, exists bool) time.Duration {
	if pp.cniState == "" {
		return 0
	}
	wired, err := cni.WiredSandbox(pp.cniState, owner, portID)
	if err != nil {
		wired = false // an unreadable record directory: unplug as without netshift-cni
	}
	pp.mu.Lock()
	since, ok := pp.goneSince[owner]
	if !ok && !exists {
		since = time.Now()
		pp.goneSince[owner] = since
	}
	pp.mu.Unlock()
	return plug.UnplugDeferral(wired, exists, since, time.Now(), pp.cniDelGrace)
}

func (pp *portPlugger) forgetGone(owner string) {
	pp.mu.Lock()
	delete(pp.goneSince, owner)
	pp.mu.Unlock()
}

// sweepParkedEvery removes, until ctx ends, the devices netshift-cni
// parked that were kept too long or are past the node's limit.
func (pp *portPlugger) sweepParkedEvery(ctx context.Context) error {
	every := min(max(pp.parkedTTL/4, time.Second), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := pp.sweepParked(ctx, time.Now()); err != nil {
				log.FromContext(ctx).Error(err, "removing parked devices", "node", pp.node)
			}
		}
	}
}

// sweepParked unplugs the parked ports plug.ParkedToSweep names and
// removes their devices (the veth pair, by its node end). A port adopted by
// a pod meanwhile is refused by the switch and kept.
func (pp *portPlugger) sweepParked(ctx context.Context, now time.Time) error {
	plugged, err := pp.db.Plugged(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, pl := range plug.ParkedToSweep(plugged, now, pp.parkedTTL, pp.parkedMax) {
		err := pp.db.UnplugParked(ctx, pl, pp.integration)
		if errors.Is(err, ovs.ErrPlugChanged) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pp.forget(pl.PortID)
		log.FromContext(ctx).Info("removed a parked device", "node", pp.node, "port", pl.PortID, "parkedAt", pl.ParkedAt)
		errs = append(errs, netdev.InNetns(pp.netns, func() error {
			// Only the veth netshift-cni made: a device of another kind under the tap's name is not ours.
			if l, err := netlink.LinkByName(pl.Tap); err == nil && l.Type() == "veth" {
				return netlink.LinkDel(l)
			}
			return nil
		}))
	}
	return errors.Join(errs...)
}
