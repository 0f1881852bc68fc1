package ovnic

import (
	"context"
	"fmt"
	"path/filepath"
)

const (
	// TransitSwitch joins the zones' routers in the interconnect databases.
	TransitSwitch = "ts1"
	// GlobalZone is the central zone.
	GlobalZone = "global"
)

// Interconnect is a lab's OVN interconnect.
type Interconnect struct {
	Lab Lab
	// Name is the lab's name.
	Name string
	// Dir is the lab's state directory, where the locks of moves and of the
	// central zone are.
	Dir string
	// OVNDir is the lab's OVN directory: the global zone's databases and
	// daemons, and the interconnect databases.
	OVNDir string
	// Nodes are the lab's nodes, in name order.
	Nodes []Node
	// CentralRemotes are the remotes the central databases serve besides their
	// unix sockets, by database (nb, sb).
	CentralRemotes map[string][]string
}

// Node is a lab node as the interconnect knows it.
type Node struct {
	Name string
	// Index numbers the node's subnet (198.18.<Index>.0/24) and its router
	// ports' MACs.
	Index int
	// Dir is the node's directory; a zone of its own lives in its zone/.
	Dir string
}

// Lab is what the interconnect needs the lab to do.
type Lab interface {
	// Commands opens the lab's command log for the commands of one actuation.
	Commands() (Commands, error)
	// Daemons are the roles of the lab's daemons that run (one read of its state).
	Daemons() map[string]bool
	// StopDaemons stops the lab's daemons with these roles and forgets them: a
	// zone that is gone is not a daemon that died.
	StopDaemons(roles ...string)
	// SetNodeNB records the northbound database a node's new pods' logical
	// ports go into (the stand-in network plugin creates them there).
	SetNodeNB(node, nb string) error
	// CheckFrom checks that the node's pods reach the other nodes' pods.
	CheckFrom(ctx context.Context, node string) error
}

// Runner runs one command with extra environment and returns its output; the
// error quotes the command and what it printed.
type Runner interface {
	Run(ctx context.Context, env []string, name string, args ...string) (string, error)
}

// Commands run the commands of one actuation, each logged in the lab's
// command log.
type Commands interface {
	Runner
	// Vsctl runs ovs-vsctl against the node's own database.
	Vsctl(ctx context.Context, node string, args ...string) (string, error)
	// StartDaemon starts a daemon that detaches (in the machine's namespaces)
	// and records it as role from its pid file.
	StartDaemon(ctx context.Context, role string, env []string, pidfile, bin string, args ...string) error
	Close()
}

func (ic *Interconnect) node(name string) (Node, bool) {
	for _, n := range ic.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

func (ic *Interconnect) icDB(which string) string {
	return "unix:" + filepath.Join(ic.OVNDir, "ic"+which+".sock")
}

func (ic *Interconnect) zoneDir(node string) string {
	n, _ := ic.node(node)
	return filepath.Join(n.Dir, "zone")
}

// zoneHome is where a zone's databases and daemons live: the lab's OVN
// directory for the global zone, the node's zone directory for a node's own.
func (ic *Interconnect) zoneHome(zone string) string {
	if zone == GlobalZone {
		return ic.OVNDir
	}
	return ic.zoneDir(zone)
}

// zoneDBs are the NB and SB sockets of a zone.
func (ic *Interconnect) zoneDBs(zone string) (nb, sb string) {
	d := ic.zoneHome(zone)
	return "unix:" + filepath.Join(d, "nb.sock"), "unix:" + filepath.Join(d, "sb.sock")
}

// centralDBs are the central zone's NB and SB sockets.
func (ic *Interconnect) centralDBs() (nb, sb string) { return ic.zoneDBs(GlobalZone) }

func nbctl(ctx context.Context, r Runner, db string, args ...string) (string, error) {
	return r.Run(ctx, nil, "ovn-nbctl", append([]string{"--db=" + db, "--timeout=20"}, args...)...)
}

func sbctl(ctx context.Context, r Runner, db string, args ...string) (string, error) {
	return r.Run(ctx, nil, "ovn-sbctl", append([]string{"--db=" + db, "--timeout=20"}, args...)...)
}

func (ic *Interconnect) icsbctl(ctx context.Context, r Runner, args ...string) (string, error) {
	return r.Run(ctx, nil, "ovn-ic-sbctl", append([]string{"--db=" + ic.icDB("sb"), "--timeout=20"}, args...)...)
}

// tsAddr is a zone's router port on the transit switch: its MAC and address.
func (ic *Interconnect) tsAddr(zone string) (mac, cidr string) {
	if zone == GlobalZone {
		return "0a:58:c6:12:fe:fe", "198.18.254.254/24"
	}
	n, _ := ic.node(zone)
	return fmt.Sprintf("0a:58:c6:12:fe:%02x", n.Index), fmt.Sprintf("198.18.254.%d/24", n.Index)
}
