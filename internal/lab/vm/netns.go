package vm

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Netns runs the lab's fast VM: a network namespace whose traffic thread is
// its CPU. The lab wires its interface onto a host (a veth whose host end is
// the tap) and removes it; a migration pauses the thread, removes the
// interface from the source, waits Pause, wires it on the target, sends the
// announcements QEMU would, and resumes. Unlike QEMU's, its tap appears on
// the target only at the resume.
type Netns struct {
	// NS is the VM's own namespace, which keeps its sockets while its
	// interface moves between hosts.
	NS string
	// PeerIP is where the VM sends; PeerEcho the peer's answering socket
	// (OpenEcho in the peer's namespace), which the VM's thread serves too.
	PeerIP   string
	PeerEcho int
	Interval time.Duration
	// Pause is how long the VM is gone between its source tap going and its
	// target tap appearing.
	Pause time.Duration
	// Wire puts the VM's interface on host and returns once the host's
	// switch has attached the tap; Unwire removes it.
	Wire   func(ctx context.Context, host Host, spec Spec) error
	Unwire func(ctx context.Context, host Host, spec Spec) error

	traffic *Traffic // the running VM's
}

type netnsDomain struct {
	host  Host
	spec  Spec
	wired bool
}

func (d *netnsDomain) Host() Host { return d.host }
func (d *netnsDomain) Spec() Spec { return d.spec }

func (n *Netns) Define(_ context.Context, host Host, spec Spec) (Domain, error) {
	return &netnsDomain{host: host, spec: spec}, nil
}

func (n *Netns) Start(ctx context.Context, d Domain) error {
	nd := d.(*netnsDomain)
	if err := n.Wire(ctx, nd.host, nd.spec); err != nil {
		return err
	}
	nd.wired = true
	return nil
}

// StartIncoming does nothing: the namespace VM's tap appears at the resume.
func (n *Netns) StartIncoming(context.Context, Domain) error { return nil }

func (n *Netns) Traffic(_ context.Context, d Domain) (*Traffic, error) {
	t, err := StartTraffic(n.NS, n.PeerIP, n.PeerEcho, n.Interval)
	if err != nil {
		return nil, fmt.Errorf("VM %s: %w", d.Spec().Name, err)
	}
	n.traffic = t
	return t, nil
}

func (n *Netns) Migrate(ctx context.Context, from, to Domain) (Migration, error) {
	src, dst := from.(*netnsDomain), to.(*netnsDomain)
	var m Migration
	if n.traffic == nil {
		return m, fmt.Errorf("VM %s: migrated before its traffic started", src.spec.Name)
	}
	n.traffic.Pause(100 * time.Millisecond)
	m.Stop = time.Now()
	if err := n.Unwire(ctx, src.host, src.spec); err != nil {
		return m, err
	}
	src.wired = false
	time.Sleep(n.Pause)
	if err := n.Wire(ctx, dst.host, dst.spec); err != nil {
		return m, err
	}
	dst.wired = true
	mac, err := net.ParseMAC(dst.spec.MAC)
	if err != nil {
		return m, fmt.Errorf("VM %s: MAC: %w", dst.spec.Name, err)
	}
	stop := make(chan struct{})
	time.AfterFunc(time.Second, func() { close(stop) })
	if err := Announce(n.NS, mac, stop); err != nil {
		return m, err
	}
	m.Resume = time.Now()
	n.traffic.Resume()
	m.DowntimeMs = float64(m.Resume.Sub(m.Stop).Microseconds()) / 1000
	m.TotalMs = m.DowntimeMs
	return m, nil
}

func (n *Netns) Destroy(ctx context.Context, d Domain) error {
	nd := d.(*netnsDomain)
	if !nd.wired {
		return nil
	}
	nd.wired = false
	return n.Unwire(ctx, nd.host, nd.spec)
}

// Crashed is always "": the namespace VM's CPU is the lab's own thread.
func (n *Netns) Crashed(Domain) string { return "" }
