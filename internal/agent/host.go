package agent

import (
	"context"
	"fmt"
	"net"
	"time"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/nodehost"
	"netshift.io/netshift/internal/nodenet"
)

// host is the node the agent runs on: the one it was given (Options.Host, a
// simulated node), or else the real node its fields locate.
func (a *Agent) host() nodehost.Host {
	if a.Host != nil {
		return a.Host
	}
	return linuxHost{a}
}

// config is the node's network configuration, nil when nothing on the node reads one.
func (a *Agent) config() nodehost.Config { return a.host().Config() }

// linuxHost is a real node: its network namespace (NodeNetns, "" for the
// agent's own), its kernel's clock and scheduler, its files.
type linuxHost struct{ a *Agent }

func (h linuxHost) Now() time.Time { return h.a.now() }

func (h linuxHost) Approach(ctx context.Context, at time.Time) error {
	askShortSlices()
	return h.a.untilFinalApproach(ctx, at)
}

func (h linuxHost) RunAt(ctx context.Context, at time.Time, fire func(context.Context) (netplugin.Outcome, error)) (nodehost.Run, error) {
	began, ended, o, prio, err := h.a.onTime(ctx, at, fire)
	return nodehost.Run{Began: began, Ended: ended, Outcome: o, Priority: string(prio)}, err
}

func (h linuxHost) LinkMTU(link string) (int, error) { return nodenet.LinkMTU(h.a.NodeNetns, link) }

func (h linuxHost) LinkWithAddress(ip net.IP) (string, error) {
	nl, err := netdev.Open(h.a.NodeNetns)
	if err != nil {
		return "", err
	}
	defer nl.Close()
	return nl.LinkWithAddress(ip)
}

func (h linuxHost) UDPPortUser(port int) (string, error) { return udpPortUser(h.a.NodeNetns, port) }
func (h linuxHost) BootID() (string, error)              { return h.a.bootID() }

// IPv6Holder looks at every pod's interfaces, then at their node ends.
func (h linuxHost) IPv6Holder(ctx context.Context) (string, error) {
	pods, _, err := h.a.Pods.PodNetworks(ctx)
	if err != nil {
		return "", fmt.Errorf("list the node's pods: %w", err)
	}
	for _, p := range pods {
		held, err := netdev.HasIPv6(p.Netns, p.Interfaces)
		if err == nil && held != "" {
			return fmt.Sprintf("pod %s %s", p.Pod, held), nil
		}
		if err == nil && len(p.HostInterfaces) > 0 {
			if held, err = netdev.HasIPv6(h.a.NodeNetns, p.HostInterfaces); err == nil && held != "" {
				return fmt.Sprintf("pod %s's node end %s", p.Pod, held), nil
			}
		}
	}
	return "", nil
}
func (h linuxHost) ClockSynced() (bool, error) { return kernelClockSynced() }

func (h linuxHost) Config() nodehost.Config {
	if h.a.NetworkConfig == "" {
		return nil
	}
	return configFile(h.a.NetworkConfig)
}

// configFile is the node's network configuration as a file under flock,
// which netshift-cni reads each pod's set-up from.
type configFile string

func (f configFile) Name() string { return string(f) }

func (f configFile) Lock(ctx context.Context) (func(), error) {
	l, err := nodeconfig.LockExclusive(ctx, string(f))
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

func (f configFile) Read() (nodeconfig.File, error) { return nodeconfig.Read(string(f)) }

func (f configFile) Write(c nodeconfig.File) error { return nodeconfig.Write(string(f), c) }
