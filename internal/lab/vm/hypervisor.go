package vm

import (
	"context"
	"time"
)

// Host is a node as a hypervisor sees it.
type Host struct {
	Name  string
	Netns string
	// Address is the node's underlay address, where migrations arrive.
	Address string
	// Dir is where the hypervisor keeps a VM's sockets and logs on this host.
	Dir string
}

// Spec is a VM: its one NIC is the port's.
type Spec struct {
	Name string
	MAC  string
	// IP is the guest's address with its prefix length (198.18.250.10/24).
	IP string
	// Tap is the host end's name, the one netshift's port-spec names.
	Tap string
	MTU int
}

// Domain is a VM defined on one host.
type Domain interface {
	Host() Host
	Spec() Spec
}

// Migration is what a migration measured, on the machine's wall clock.
type Migration struct {
	// Stop is when the guest's CPUs stopped on the source, Resume when they
	// ran again on the target (QEMU's STOP and RESUME events).
	Stop, Resume time.Time
	// DowntimeMs and TotalMs are the hypervisor's own figures of the
	// migration's downtime and its whole time.
	DowntimeMs float64
	TotalMs    float64
}

// Hypervisor runs VMs on the lab's nodes as libvirt (Nova) or virt-launcher
// (KubeVirt) runs them.
type Hypervisor interface {
	// Define prepares a VM on host without running it: for QEMU its tap, as
	// libvirt creates it (so the tap appears when the domain is defined).
	Define(ctx context.Context, host Host, spec Spec) (Domain, error)
	// Start boots the VM; it answers its peer once the guest is up.
	Start(ctx context.Context, d Domain) error
	// StartIncoming starts d as a migration's target, paused until the
	// migration brings the guest.
	StartIncoming(ctx context.Context, d Domain) error
	// Traffic starts the measured exchange between the running VM and its peer.
	Traffic(ctx context.Context, d Domain) (*Traffic, error)
	// Migrate moves the running guest from `from` to `to` (started incoming)
	// and returns once it runs on `to`.
	Migrate(ctx context.Context, from, to Domain) (Migration, error)
	// Destroy ends the VM on its host and removes what Define made.
	Destroy(ctx context.Context, d Domain) error
	// Crashed says why the guest on d died ("" if it did not): a dead guest
	// answers nothing, which is the guest's loss, not the network's.
	Crashed(d Domain) string
}
