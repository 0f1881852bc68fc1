package plug

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

// Mode is how ports are plugged on a node.
type Mode string

const (
	// PerPort puts each port on its own bridge pbr-<id>, joined to the
	// integration bridge by the patch pair pbp-<id> / ipb-<id>.
	PerPort Mode = "per-port"
	// Direct puts the tap straight on the integration bridge (the classic way).
	Direct Mode = "direct"
	// Subport puts the tap of a trunk's subport (a pod in a VM) on the
	// node's trunk bridge, as an access port of the subport's VLAN: the
	// node is a VM whose trunk NIC is that bridge's uplink, and the network
	// binds the subport by its parent port and VLAN, not by an iface-id. A
	// pooled subport is plugged so; it is never a node's setting.
	Subport Mode = "subport"
)

// ParseMode reads a mode setting; field names where it came from.
func ParseMode(field, s string) (Mode, error) {
	switch Mode(s) {
	case PerPort, Direct:
		return Mode(s), nil
	}
	return "", fmt.Errorf("%s: %s is not a plug mode (allowed: %s, %s)", field, Clip(s), PerPort, Direct)
}

// Port is one port to plug: a logical (OVN) or Neutron port used by a VM or a
// pod through a tap device.
type Port struct {
	// ID is the port's ID: the OVN logical switch port name or Neutron port
	// UUID, written as external_ids:iface-id.
	ID string `json:"id"`
	// MAC is the VM's or pod's MAC address on the port (attached-mac).
	MAC string `json:"mac"`
	// VMUUID is the VM's or pod's ID (vm-uuid); the pod's UID when empty.
	VMUUID string `json:"vmUUID,omitempty"`
	// Tap is the device the VM or pod appears as on the node: always "tap"
	// and the first 11 characters of the ID (as Nova names them), never a
	// name the pod picks; a port-spec may give it only as that.
	Tap string `json:"tap,omitempty"`
	// Isolate keeps the port cut off inside its port bridge (VLAN 4095 on
	// pbp-<id>) until the agent sees it bound and activates it.
	Isolate bool `json:"isolate,omitempty"`
	// Held marks the port of a migration's target, never from a spec: its tap
	// joins its port bridge only once the agent holds the bridge for its VM
	// (ovs.Switch.HoldForVM) or finds it needs no hold (ovs.Switch.AttachTap).
	// Before, the bridge's NORMAL flow would pass what OVN sends here to a
	// tap whose incoming VM takes it only once resumed.
	Held bool `json:"-"`
}

var (
	portID   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	colonMAC = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$`)
)

// checkMAC accepts what OVS and OVN take as a port's address: a unicast,
// non-zero Ethernet MAC written with colons. A multicast or zero address on a
// port would flood or never be learned; OVN reads only the colon form.
func checkMAC(mac string) error {
	if !colonMAC.MatchString(mac) {
		return fmt.Errorf("%s is not an Ethernet MAC address written aa:bb:cc:dd:ee:ff", Clip(mac))
	}
	hw, _ := net.ParseMAC(mac)
	if hw[0]&1 == 1 {
		return fmt.Errorf("%s is a multicast address; a port needs a unicast one (first octet even)", Clip(mac))
	}
	if hw.String() == "00:00:00:00:00:00" {
		return fmt.Errorf("%s is the zero address", Clip(mac))
	}
	return nil
}

// DefaultTap is the tap name of a port that names none.
func DefaultTap(id string) string { return "tap" + shortID(id, 11) }

// WithDefaults fills the tap name and VM ID.
func (p Port) WithDefaults(vmUUID string) Port {
	if p.Tap == "" {
		p.Tap = DefaultTap(p.ID)
	}
	if p.VMUUID == "" {
		p.VMUUID = vmUUID
	}
	return p
}

// Validate names the field and what it allows.
func (p Port) Validate() error {
	if !portID.MatchString(p.ID) {
		return fmt.Errorf("port id: %s must be 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit", Clip(p.ID))
	}
	if err := checkMAC(p.MAC); err != nil {
		return fmt.Errorf("port %s: mac: %w", p.ID, err)
	}
	if p.Tap != "" && p.Tap != DefaultTap(p.ID) {
		return fmt.Errorf("port %s: tap: %s is not the port's own, %s: a tap's name derives from the port ID alone (leave it out)", p.ID, Clip(p.Tap), DefaultTap(p.ID))
	}
	if len(p.VMUUID) > 64 || strings.ContainsAny(p.VMUUID, "\"\\ \t\n") {
		return fmt.Errorf("port %s: vmUUID: %s must be at most 64 characters, with no quotes, backslashes or spaces", p.ID, Clip(p.VMUUID))
	}
	return nil
}

// Names are the OVS names of a port in per-port mode.
type Names struct {
	// Bridge is the port's own bridge, pbr-<11 characters of the ID>: a
	// bridge is also an interface, so at most 15 bytes.
	Bridge string
	// BridgePatch is the patch port on the port's bridge, pbp-<id>.
	BridgePatch string
	// IntegrationPatch is the patch port on the integration bridge, ipb-<id>:
	// the port the network controller binds by iface-id.
	IntegrationPatch string
	// Parked is the name a parked pod end has on the node, pkd-<id> (see
	// Parked): a device name, so at most 15 bytes.
	Parked string
}

// NamesFor derives a port's per-port names from its ID alone, so that a
// restarted agent finds what an earlier one created. Patch ports are not
// kernel devices and keep the whole ID; the bridge name is shortened, so two
// IDs can share one, which Admit refuses.
func NamesFor(id string) Names {
	return Names{Bridge: "pbr-" + shortID(id, 11), BridgePatch: "pbp-" + id, IntegrationPatch: "ipb-" + id, Parked: "pkd-" + shortID(id, 11)}
}

// shortID is the first n characters of the ID without dashes, which UUIDs
// spend four of their first 15 characters on.
func shortID(id string, n int) string {
	s := strings.ReplaceAll(id, "-", "")
	if len(s) > n {
		s = s[:n]
	}
	return s
}
