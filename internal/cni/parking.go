package cni

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// A pooled pod's device outlives the pod when the node parks it (the
// host-side half of Kuryr's port pools): at DEL, the pod end leaves the
// pod's namespace for the node's, down and under the port's parked name,
// while the node end stays plugged with the port's iface-id, so the network
// controller keeps the port bound and Neutron keeps it ACTIVE. The next pod
// its pool hands the port to takes the device back at ADD: no new veth, no
// new plug, no new binding to wait for. The agent removes what stays parked
// too long (plug.ParkedToSweep).

// parkPooled parks a sandbox's device at its DEL, if the node keeps parked
// devices and has room: false when it did not (the caller then unwires as
// usual). Every failure falls back to that: parking is an optimisation.
func parkPooled(ctx context.Context, sw *ovs.Switch, p *PoolConfig, st sandboxState, netnsPath, ifName string) bool {
	if p.ParkedDevices == 0 || st.Mode == plug.Subport || netnsPath == "" {
		return false
	}
	if _, err := os.Stat(netnsPath); err != nil {
		return false // the sandbox's namespace is gone: so is the pod end
	}
	plugged, err := sw.Plugged(ctx)
	if err != nil || !plug.MayPark(plugged, p.ParkedDevices) {
		return false
	}
	mine, ok := plug.PlugOf(plugged, st.PortID)
	if !ok || mine.Owner != st.Pod {
		return false // unplugged already, or taken over by the port's next pod, or never plugged
	}
	link := podLink{Netns: netnsPath, IfName: ifName, HostName: st.Tap}
	if err := link.park(plug.NamesFor(st.PortID).Parked); err != nil {
		fmt.Fprintf(os.Stderr, "netshift-cni: node %s: pod %s: port %s: not parked: %v\n", p.Node, st.Pod, st.PortID, err)
		return false
	}
	if err := sw.Park(ctx, mine, time.Now()); err != nil {
		fmt.Fprintf(os.Stderr, "netshift-cni: node %s: pod %s: port %s: not parked: %v\n", p.Node, st.Pod, st.PortID, err)
		_ = deleteHostLink(plug.NamesFor(st.PortID).Parked) // the pair goes with it; unwiring does the rest
		return false
	}
	return true
}

// parkedCandidate says whether the node holds a parked device the pod can
// take for port: plugged the node's way under the port's tap, and either
// parked or already adopted for this pod (the agent may adopt it first).
func parkedCandidate(plugged []plug.Plugged, mode plug.Mode, port plug.Port, pod string) bool {
	pl, ok := plug.PlugOf(plugged, port.ID)
	return ok && (pl.Parked() || pl.Owner == pod) && pl.Mode == mode && pl.Tap == port.Tap
}

// park moves the pod end out of the pod's namespace into the node's (the
// one netshift-cni runs in), down, under name parked. Its addresses go with
// the move; its MAC is the port's and stays.
func (l podLink) park(parked string) error {
	nodeNS, err := netns.Get()
	if err != nil {
		return fmt.Errorf("the node's network namespace: %w", err)
	}
	defer nodeNS.Close()
	if err := deleteHostLink(parked); err != nil { // a leftover of a DEL cut short
		return err
	}
	return netdev.InNetns(l.Netns, func() error {
		link, err := netlink.LinkByName(l.IfName)
		if err != nil {
			return fmt.Errorf("%s in %s: %w", l.IfName, l.Netns, err)
		}
		if _, ok := link.(*netlink.Veth); !ok {
			return fmt.Errorf("%s in %s is a %s, not the veth netshift-cni made", l.IfName, l.Netns, link.Type())
		}
		if err := netlink.LinkSetDown(link); err != nil {
			return fmt.Errorf("%s down: %w", l.IfName, err)
		}
		// Renamed first: the node has its own eth0.
		if err := netlink.LinkSetName(link, parked); err != nil {
			return fmt.Errorf("rename %s to %s: %w", l.IfName, parked, err)
		}
		if err := netlink.LinkSetNsFd(link, int(nodeNS)); err != nil {
			return fmt.Errorf("move %s to the node: %w", parked, err)
		}
		return nil
	})
}

// unpark takes the port's parked device for the pod: its pod end moves into
// the pod's namespace as l.IfName and is configured as create does. false
// when there is no usable parked device, or taking it failed (the error
// says why, and the device is gone); create then makes a new one.
func (l podLink) unpark(parked string, iface portpool.Interface) (bool, error) {
	podEnd, err := netlink.LinkByName(parked)
	if err != nil {
		return false, nil
	}
	host, err := netlink.LinkByName(l.HostName)
	if err != nil || podEnd.Attrs().HardwareAddr.String() != iface.MAC.String() {
		_ = netlink.LinkDel(podEnd)
		return false, nil
	}
	podNS, err := netns.GetFromPath(l.Netns)
	if err != nil {
		return false, fmt.Errorf("pod namespace %s: %w", l.Netns, err)
	}
	defer podNS.Close()
	if err := netlink.LinkSetNsFd(podEnd, int(podNS)); err != nil {
		return false, fmt.Errorf("move parked %s into %s: %w", parked, l.Netns, err)
	}
	if l.MTU > 0 && host.Attrs().MTU != l.MTU {
		if err := netlink.LinkSetMTU(host, l.MTU); err != nil {
			_ = netlink.LinkDel(host)
			return false, fmt.Errorf("node end %s MTU %d: %w", l.HostName, l.MTU, err)
		}
	}
	err = netdev.InNetns(l.Netns, func() error {
		link, err := netlink.LinkByName(parked)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetName(link, l.IfName); err != nil {
			return fmt.Errorf("rename %s to %s: %w", parked, l.IfName, err)
		}
		return l.configurePodEnd(iface)
	})
	if err == nil && l.TxChecksumOff {
		err = netdev.SetTxChecksum(l.Netns, l.IfName, false)
	}
	if err != nil {
		_ = netlink.LinkDel(host) // the pair goes: create makes a fresh one
		return false, fmt.Errorf("%s in %s: %w", l.IfName, l.Netns, err)
	}
	if err := l.ensureHostUp(); err != nil {
		_ = netlink.LinkDel(host)
		return false, err
	}
	return true, nil
}

// takeParked wires the pod through its port's parked device when the node
// has one: the plug is adopted for the pod first (so that the agent's sweep
// cannot take it meanwhile), then the device. false: nothing was taken, and
// the caller makes and plugs a fresh device.
func takeParked(ctx context.Context, sw *ovs.Switch, p *PoolConfig, link podLink, mode plug.Mode, port plug.Port, pod, dp string, iface portpool.Interface, holderGone func(string) bool) (bool, error) {
	if p.ParkedDevices == 0 || mode == plug.Subport {
		return false, nil
	}
	plugged, err := sw.Plugged(ctx)
	if err != nil {
		return false, fmt.Errorf("port %s: %w", port.ID, err)
	}
	if !parkedCandidate(plugged, mode, port, pod) {
		return false, nil
	}
	// The agent may have plugged a fresh port for the pod first: no parked device then.
	if _, err := netlink.LinkByName(plug.NamesFor(port.ID).Parked); err != nil {
		return false, nil
	}
	if err := plugPooled(ctx, sw, p, mode, port, pod, dp, 0, holderGone); err != nil {
		return false, err
	}
	ok, err := link.unpark(plug.NamesFor(port.ID).Parked, iface)
	if err != nil {
		fmt.Fprintf(os.Stderr, "netshift-cni: node %s: pod %s: port %s: parked device not taken, making a new one: %v\n", p.Node, pod, port.ID, err)
	}
	return ok, nil
}

// WiredSandbox says whether a sandbox netshift-cni wired, whose DEL has not
// come yet, names pod (namespace/name) and port: the agent then leaves the
// port to that DEL (plug.UnplugDeferral).
func WiredSandbox(stateDir, pod, portID string) (bool, error) {
	records, err := sandboxRecords(stateDir)
	for _, r := range records {
		if r.Pod == pod && r.PortID == portID {
			return true, nil
		}
	}
	return false, err
}
