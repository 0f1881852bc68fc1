package ovnic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"netshift.io/netshift/internal/lab/poll"
)

// transitBound makes sure the interconnect carries zone's traffic: zone's
// ovn-ic has published its transit port's gateway, and every other zone's
// ovn-ic has bound its copy of that port to the gateway.
//
// An ovn-ic has been seen to stop writing to a database for good after a
// burst of rejected transactions (a node's chassis in the middle of its move
// is briefly both local and remote), while it still wrote to its others: the
// gateway or the binding never came, and a fresh ovn-ic made it at once. So
// an ovn-ic that has not done its part within 3 s is started again.
func (ic *Interconnect) transitBound(ctx context.Context, c Commands, zone string, progress func(string, ...any)) error {
	port := "ts-" + zone
	var gateway string
	published := func(ctx context.Context) (bool, error) {
		out, err := ic.icsbctl(ctx, c, "--bare", "--columns=gateway", "find", "port_binding", "logical_port="+port)
		gateway = strings.TrimSpace(out)
		return err == nil && gateway != "", nil
	}
	if err := ic.ovnICDoes(ctx, c, zone, "publish the gateway of "+port, published, progress); err != nil {
		return err
	}
	for _, other := range ic.interconnectedZones() {
		if other == zone {
			continue
		}
		_, sb := ic.zoneDBs(other)
		bound := func(ctx context.Context) (bool, error) {
			pb, err := sbctl(ctx, c, sb, "--bare", "--columns=chassis", "find", "port_binding", "logical_port="+port)
			if err != nil || strings.TrimSpace(pb) == "" {
				return false, nil
			}
			ch, err := sbctl(ctx, c, sb, "--bare", "--columns=_uuid", "find", "chassis", "name="+gateway)
			return err == nil && strings.TrimSpace(ch) == strings.TrimSpace(pb), nil
		}
		if err := ic.ovnICDoes(ctx, c, other, "bind "+port+" to "+gateway, bound, progress); err != nil {
			return err
		}
	}
	return nil
}

// ovnICDoes waits up to 3 s for zone's ovn-ic to do what done checks, and
// otherwise starts that ovn-ic again and waits up to 10 s more.
func (ic *Interconnect) ovnICDoes(ctx context.Context, c Commands, zone, what string, done func(context.Context) (bool, error), progress func(string, ...any)) error {
	err := poll.Until(ctx, 10*time.Millisecond, 3*time.Second, done, func() error { return errICStuck })
	if !errors.Is(err, errICStuck) {
		return err
	}
	progress("zone %s: its ovn-ic did not %s within 3s; starting it again", zone, what)
	ic.Lab.StopDaemons("ovn-ic:" + zone)
	if err := ic.startIC(ctx, c, zone, ic.zoneHome(zone)); err != nil {
		return err
	}
	return poll.Until(ctx, 10*time.Millisecond, 10*time.Second, done, func() error {
		return fmt.Errorf("zone %s: its ovn-ic did not %s within 10s of starting again", zone, what)
	})
}

var errICStuck = errors.New("ovn-ic stuck")

// interconnectedZones are the zones whose ovn-ic runs (one read of the state).
func (ic *Interconnect) interconnectedZones() []string {
	live := ic.Lab.Daemons()
	var zones []string
	if live["ovn-ic:"+GlobalZone] {
		zones = append(zones, GlobalZone)
	}
	for _, n := range ic.Nodes {
		if live["ovn-ic:"+n.Name] {
			zones = append(zones, n.Name)
		}
	}
	return zones
}

// handOverGateway makes the interconnect list node as zone's transit gateway
// and waits until it does. A gateway row of another zone is moved to this
// zone rather than left to the two ovn-ic daemons, which would delete it and
// register it again, and every other zone would delete its record of the
// node, and its tunnels to it, and make them again.
func (ic *Interconnect) handOverGateway(ctx context.Context, r Runner, node, zone string) error {
	var az string
	if err := poll.Until(ctx, 10*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := ic.icsbctl(ctx, r, "--bare", "--columns=_uuid", "find", "availability_zone", "name="+zone)
		az = strings.TrimSpace(out)
		return err == nil && az != "", nil
	}, func() error { return fmt.Errorf("zone %s is not in the interconnect after 10s", zone) }); err != nil {
		return err
	}
	out, err := ic.icsbctl(ctx, r, "--bare", "--columns=_uuid,availability_zone", "find", "gateway", "name="+node)
	if err != nil {
		return err
	}
	if f := strings.Fields(out); len(f) == 2 && f[1] != az {
		if _, err := ic.icsbctl(ctx, r, "set", "gateway", f[0], "availability_zone="+az); err != nil {
			return err
		}
	}
	return poll.Until(ctx, 10*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := ic.icsbctl(ctx, r, "--bare", "--columns=name", "find", "gateway", "name="+node, "availability_zone="+az)
		return err == nil && strings.TrimSpace(out) == node, nil
	}, func() error {
		return fmt.Errorf("the interconnect does not list %s as zone %s's gateway after 10s", node, zone)
	})
}

// GlobalNodes are the nodes whose ovn-controller is in the global zone.
func (ic *Interconnect) GlobalNodes(ctx context.Context, c Commands) ([]string, error) {
	var out []string
	for _, n := range ic.Nodes {
		z, err := ic.ZoneOf(ctx, c, n.Name)
		if err != nil {
			return nil, err
		}
		if z == GlobalZone {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

// globalGateway is the node that carries the global zone's transit traffic
// ("" if none).
func (ic *Interconnect) globalGateway(ctx context.Context, r Runner) (string, error) {
	nb, _ := ic.centralDBs()
	out, err := nbctl(ctx, r, nb, "lrp-get-gateway-chassis", "rtr-ts-"+GlobalZone)
	if err != nil {
		return "", err
	}
	return gatewayChassis(out), nil
}

// gatewayChassis is the chassis of ovn-nbctl lrp-get-gateway-chassis's answer
// for the global zone's transit port ("" if none).
func gatewayChassis(out string) string {
	// "rtr-ts-global-node-3     1"
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			return strings.TrimPrefix(f[0], "rtr-ts-"+GlobalZone+"-")
		}
	}
	return ""
}

// moveGlobalGateway gives the global zone's transit gateway to the last
// other node that stays in the zone, when the leaving node carries it (a
// short pause of the traffic between the global zone and the others, which
// the lab avoids by putting the gateway on the node a name-ordered rollout
// moves last). The last node to leave keeps it until its switch leaves.
func (ic *Interconnect) moveGlobalGateway(ctx context.Context, c Commands, leaving string) error {
	gw, err := ic.globalGateway(ctx, c)
	if err != nil || gw != leaving {
		return err
	}
	nodes, err := ic.GlobalNodes(ctx, c)
	if err != nil {
		return err
	}
	nb, _ := ic.centralDBs()
	for i := len(nodes) - 1; i >= 0; i-- {
		if nodes[i] == leaving {
			continue
		}
		if _, err := c.Vsctl(ctx, nodes[i], "set", "open", ".", "external_ids:ovn-is-interconn=true"); err != nil {
			return err
		}
		_, err := nbctl(ctx, c, nb, "lrp-del-gateway-chassis", "rtr-ts-"+GlobalZone, leaving,
			"--", "lrp-set-gateway-chassis", "rtr-ts-"+GlobalZone, nodes[i], "1")
		return err
	}
	return nil
}
