package plug

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Plugged is a port netshift has plugged on a node, as read back from its OVSDB.
type Plugged struct {
	PortID string
	Mode   Mode
	// Owner is the pod (namespace/name) the port was plugged for.
	Owner string
	Tap   string
	// Bridge is the port bridge (per-port mode) or the trunk bridge (subport).
	Bridge string
	// VLAN is a subport's VLAN: its access port's tag on the trunk bridge.
	VLAN int
	// Isolated says the bridge-side patch port still carries VLAN 4095.
	Isolated bool
	// ParkedAt is when netshift-cni parked the port's device (see Parked);
	// zero for a port plugged for a pod.
	ParkedAt time.Time
}

// ErrModeConflict is a plug refused because the node has ports plugged the other way.
var ErrModeConflict = errors.New("plug mode conflict")

// ErrNameTaken is a plug refused because a name it derives belongs to another port.
var ErrNameTaken = errors.New("name taken")

// Admission is what a plug does on a node.
type Admission struct {
	// Existing is the port's earlier plug on this node, if any: plugging
	// again only repairs it.
	Existing *Plugged
	// Isolate is whether to (re)apply VLAN 4095: only on a fresh plug, never
	// to a port already activated.
	Isolate bool
	// Discard is the port's parked device of the other mode: unplugged
	// (and its device removed) before the port is plugged this node's way.
	Discard *Plugged
}

// Admit decides whether port p may be plugged on a node set to mode, given
// what is plugged there. It refuses mixing modes (while any port of the other
// mode is plugged), a derived bridge name or a tap used by another port, and
// the same port for a second owner (a migration plugs the port on another
// node, never twice on one). A parked port is nobody's: its next pod adopts
// it, and it counts against neither mode (a parked port of the other mode
// is unplugged before the port is plugged anew).
func Admit(mode Mode, plugged []Plugged, p Port, owner string) (Admission, error) {
	var other []string
	var adm Admission
	for i, pl := range plugged {
		if pl.PortID == p.ID {
			if pl.Parked() {
				adm.Existing = &plugged[i]
				continue
			}
			if pl.Owner != owner {
				return Admission{}, fmt.Errorf("port %s: %w: already plugged on this node for pod %s", p.ID, ErrNameTaken, pl.Owner)
			}
			adm.Existing = &plugged[i]
			continue
		}
		// Subports sit on the trunk bridge, apart from either way of plugging on the
		// integration bridge; parked ports go before a plug needs their names.
		if pl.Mode != mode && pl.Mode != Subport && mode != Subport && !pl.Parked() {
			other = append(other, pl.PortID)
		}
		if mode == PerPort && pl.Mode == PerPort && pl.Bridge == NamesFor(p.ID).Bridge {
			return Admission{}, fmt.Errorf("port %s: %w: bridge %s already belongs to port %s", p.ID, ErrNameTaken, pl.Bridge, pl.PortID)
		}
		if pl.Tap == p.Tap {
			return Admission{}, fmt.Errorf("port %s: %w: tap %s already belongs to port %s", p.ID, ErrNameTaken, p.Tap, pl.PortID)
		}
	}
	if adm.Existing != nil && adm.Existing.Mode != mode {
		if !adm.Existing.Parked() {
			other = append(other, p.ID)
		} else {
			adm.Discard, adm.Existing = adm.Existing, nil
		}
	}
	if len(other) > 0 {
		sort.Strings(other)
		return Admission{}, fmt.Errorf("port %s: %w: the node is set to %s plugging, but %d port(s) are plugged the other way (%s); "+
			"unplug them, or set the node back, before plugging in %s mode", p.ID, ErrModeConflict, mode, len(other), strings.Join(other, ", "), mode)
	}
	adm.Isolate = p.Isolate && adm.Existing == nil
	return adm, nil
}

// Stale lists the plugged ports no live pod wants any more: wanted maps an
// owner to the port ID it should have plugged on this node. Parked ports are
// nobody's and not stale: they go when parked too long (ParkedToSweep).
func Stale(plugged []Plugged, wanted map[string]string) []Plugged {
	var stale []Plugged
	for _, pl := range plugged {
		if pl.Parked() {
			continue
		}
		if id, ok := wanted[pl.Owner]; !ok || id != pl.PortID {
			stale = append(stale, pl)
		}
	}
	return stale
}
