// Package ovs owns netshift's access to OVSDB: a node's Open_vSwitch database
// (tunnel ports, mtu_request, plugging and unplugging ports), OVN's
// northbound (logical switch port options) and southbound (Encap records)
// databases. Each is one long-lived libovsdb connection with a monitor of the
// tables netshift reads, and every change is one transaction built in code
// from generated models (internal/ovs/model, hack/generate.sh). The one thing
// OVSDB cannot do, sending a packet into a bridge, is ovs-ofctl's packet-out.
//
// The cache follows the server a moment behind: libovsdb applies the
// monitor's updates as they are handled, which may be after the reply to a
// transaction that caused them. A write that waits for ovs-vswitchd (every
// Switch commit) returns with the cache caught up to it; a read that decides
// whether a port is ready (Interfaces) asks the database itself.
package ovs

// The external_ids netshift writes on what it plugs: a restarted agent finds
// its ports by them, and unplug removes exactly what carries them.
const (
	extPortID = "netshift-port-id"
	extOwner  = "netshift-owner"
	extMode   = "netshift-plug-mode"
	extTap    = "netshift-tap"
	// extParkedAt marks a parked port (see plug.Parked): when, in Unix
	// seconds; the owner key is gone meanwhile.
	extParkedAt = "netshift-parked-at"
	// DeadVLAN isolates a port inside its port bridge: NORMAL never forwards VLAN 4095.
	DeadVLAN = 4095
)

// Tunnel is a tunnel interface.
type Tunnel struct {
	Name   string
	Type   string
	OFPort int
	// DstPort is options:dst_port, 0 when unset (the protocol's default).
	DstPort int
	uuid    string
}

// Interface is what the readiness of a port is read from.
type Interface struct {
	Name   string
	OFPort int // -1: the device does not exist (yet); 0: not read
	// OVNInstalled is external_ids:ovn-installed=true, which ovn-controller
	// sets once the port is bound and its flows are in place.
	OVNInstalled bool
	// IfaceID is external_ids:iface-id, the logical port it is bound as.
	IfaceID string
	// UUID is the row's: a port plugged anew is a new row, a parked device
	// taken back is the same one.
	UUID string
}

// PodPort is an interface pods may be attached through.
type PodPort struct {
	Bridge string
	Type   string // "" for a system device (a veth), "internal", "patch", ...
}
