package plug

import (
	"slices"
	"time"
)

// Parking keeps a pooled pod's port plugged after the pod is gone, its
// device set aside on the node, so that the next pod handed the same port
// by its pool takes the device as it is: no new plug, no new binding by the
// network controller, and Neutron keeps the port ACTIVE all along. Only
// netshift-cni parks (at a sandbox's DEL) and takes back (at the next ADD);
// the agent leaves parked ports to it and removes those parked too long.

// Parked says whether the plug is a parked device: nobody's, kept for the
// next pod of the port's pool.
func (p Plugged) Parked() bool { return !p.ParkedAt.IsZero() }

// PlugOf is the port's plug on the node, if it is plugged.
func PlugOf(plugged []Plugged, portID string) (Plugged, bool) {
	for _, pl := range plugged {
		if pl.PortID == portID {
			return pl, true
		}
	}
	return Plugged{}, false
}

// MayPark says whether one more device may be parked on a node with these
// plugs: at most max are kept (0 keeps none).
func MayPark(plugged []Plugged, max int) bool {
	n := 0
	for _, pl := range plugged {
		if pl.Parked() {
			n++
		}
	}
	return n < max
}

// ParkedToSweep lists the parked devices to remove now: those parked for
// ttl or longer (their port may have left its pool since: deleted in
// Neutron, expired), and past max the oldest ones (the node's limit was
// lowered), oldest first.
func ParkedToSweep(plugged []Plugged, now time.Time, ttl time.Duration, max int) []Plugged {
	var parked []Plugged
	for _, pl := range plugged {
		if pl.Parked() {
			parked = append(parked, pl)
		}
	}
	slices.SortStableFunc(parked, func(a, b Plugged) int { return a.ParkedAt.Compare(b.ParkedAt) })
	var sweep []Plugged
	for i, pl := range parked {
		if now.Sub(pl.ParkedAt) >= ttl || len(parked)-i > max {
			sweep = append(sweep, pl)
		}
	}
	return sweep
}

// UnplugDeferral is how long the agent leaves a gone pod's port to
// netshift-cni's DEL, which may park it. Only a port netshift-cni wired (a
// sandbox record of it names the pod and the port) waits: while the pod
// still exists (terminating: the kubelet tears its sandbox down before it
// lets the pod go), and for at most grace once the pod is deleted (a forced
// deletion does not wait for the kubelet). Zero means unplug now: nothing
// was wired by netshift-cni, or its DEL never came (the sandbox was lost
// with its namespace).
func UnplugDeferral(cniWired, podExists bool, goneSince, now time.Time, grace time.Duration) time.Duration {
	if !cniWired {
		return 0
	}
	if podExists {
		return grace
	}
	left := goneSince.Add(grace).Sub(now)
	if left <= 0 {
		return 0
	}
	return left
}
