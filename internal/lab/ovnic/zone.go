package ovnic

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"netshift.io/netshift/internal/lab/poll"
	"netshift.io/netshift/internal/ovs/ovsdist"
)

// startDB creates an OVSDB database file from a schema and serves it.
func (ic *Interconnect) startDB(ctx context.Context, c Commands, role, dir, name, schema string) error {
	file := filepath.Join(dir, name+".db")
	_ = os.Remove(file)
	if _, err := c.Run(ctx, nil, "ovsdb-tool", "create", file, schema); err != nil {
		return err
	}
	pid := filepath.Join(dir, name+".pid")
	args := []string{file, "--remote=punix:" + filepath.Join(dir, name+".sock"), "--pidfile=" + pid, "--unixctl=" + filepath.Join(dir, name+".ctl"),
		"--log-file=" + filepath.Join(dir, name+".log"), "--detach"}
	if dir == ic.OVNDir {
		args = append(args, ic.CentralRemotes[name]...)
	}
	return c.StartDaemon(ctx, role, []string{"OVN_RUNDIR=" + dir}, pid, "ovsdb-server", args...)
}

// startNorthd starts a zone's ovn-northd as role.
func (ic *Interconnect) startNorthd(ctx context.Context, c Commands, zone, role string, env []string) error {
	dir := ic.zoneHome(zone)
	nb, sb := ic.zoneDBs(zone)
	pid := filepath.Join(dir, "northd.pid")
	return c.StartDaemon(ctx, role, env, pid, "ovn-northd", "--ovnnb-db="+nb, "--ovnsb-db="+sb,
		"--pidfile="+pid, "--unixctl="+filepath.Join(dir, "northd.ctl"), "--log-file="+filepath.Join(dir, "northd.log"), "--detach")
}

// startIC starts a zone's ovn-ic daemon.
func (ic *Interconnect) startIC(ctx context.Context, c Commands, zone, dir string) error {
	nb, sb := ic.zoneDBs(zone)
	pid := filepath.Join(dir, "ic.pid")
	return c.StartDaemon(ctx, "ovn-ic:"+zone, []string{"OVN_RUNDIR=" + dir}, pid, "ovn-ic",
		"--ovnnb-db="+nb, "--ovnsb-db="+sb, "--ic-nb-db="+ic.icDB("nb"), "--ic-sb-db="+ic.icDB("sb"),
		"--pidfile="+pid, "--unixctl="+filepath.Join(dir, "ic.ctl"), "--log-file="+filepath.Join(dir, "ic.log"), "--detach")
}

// joinTransit names a zone, lets it advertise and learn routes, and gives its
// router a port on the transit switch (once ovn-ic has brought ts1 into the
// zone's NB). gateway is the chassis that carries the zone's transit traffic.
func (ic *Interconnect) joinTransit(ctx context.Context, r Runner, zone, gateway string) error {
	nb, _ := ic.zoneDBs(zone)
	if _, err := nbctl(ctx, r, nb, "set", "NB_Global", ".", "name="+zone, "options:ic-route-adv=true", "options:ic-route-learn=true"); err != nil {
		return err
	}
	if err := poll.Until(ctx, 20*time.Millisecond, 10*time.Second, func(ctx context.Context) (bool, error) {
		out, err := nbctl(ctx, r, nb, "--bare", "--columns=name", "find", "logical_switch", "name="+TransitSwitch)
		return err == nil && strings.TrimSpace(out) == TransitSwitch, nil
	}, func() error {
		return fmt.Errorf("zone %s: ovn-ic did not bring the transit switch %s within 10s", zone, TransitSwitch)
	}); err != nil {
		return err
	}
	mac, cidr := ic.tsAddr(zone)
	lrp, lsp := "rtr-ts-"+zone, "ts-"+zone
	args := []string{"--may-exist", "lrp-add", ClusterRouter, lrp, mac, cidr,
		"--", "--may-exist", "lsp-add", TransitSwitch, lsp, "--", "lsp-set-type", lsp, "router",
		"--", "lsp-set-addresses", lsp, "router", "--", "lsp-set-options", lsp, "router-port=" + lrp}
	if gateway != "" {
		args = append(args, "--", "lrp-set-gateway-chassis", lrp, gateway, "1")
	}
	_, err := nbctl(ctx, r, nb, args...)
	return err
}

// Build adds interconnect to the central zone: the IC databases, ts1, the
// global zone's ovn-ic and its router port on ts1, whose transit traffic goes
// through the last node (the one a rollout in name order moves last, so no
// gateway has to move while other nodes still use it). Idempotent.
func (ic *Interconnect) Build(ctx context.Context, c Commands) error {
	if _, err := os.Stat(filepath.Join(ic.OVNDir, "icnb.sock")); err == nil {
		return nil
	}
	dir := ic.OVNDir
	if err := ic.startDB(ctx, c, "ovsdb-server:ovn-ic-nb", dir, "icnb", ovsdist.Schema("ovn-ic-nb")); err != nil {
		return err
	}
	if err := ic.startDB(ctx, c, "ovsdb-server:ovn-ic-sb", dir, "icsb", ovsdist.Schema("ovn-ic-sb")); err != nil {
		return err
	}
	if _, err := c.Run(ctx, nil, "ovn-ic-nbctl", "--db="+ic.icDB("nb"), "--timeout=20", "ts-add", TransitSwitch); err != nil {
		return err
	}
	// Only a zone's transit gateway is an interconnect chassis: a chassis
	// registered as another zone's gateway could not become its own zone's.
	gw := ic.Nodes[len(ic.Nodes)-1].Name
	if _, err := c.Vsctl(ctx, gw, "set", "open", ".", "external_ids:ovn-is-interconn=true"); err != nil {
		return err
	}
	if err := ic.startIC(ctx, c, GlobalZone, dir); err != nil {
		return err
	}
	return ic.joinTransit(ctx, c, GlobalZone, gw)
}

// retiredMarker is there while the central zone is retired.
func (ic *Interconnect) retiredMarker() string { return filepath.Join(ic.OVNDir, "central-retired") }

// CentralUp says whether the central zone runs.
func (ic *Interconnect) CentralUp() error {
	if _, err := os.Stat(ic.retiredMarker()); err == nil {
		return fmt.Errorf("the central zone is retired: start it first (lab zone-central ensure)")
	}
	return nil
}

// CentralEnsure starts the central zone again (fresh NB and SB, ovn-northd,
// the cluster router and the VM switch, ovn-ic and the transit port); the
// nodes join it one by one. Idempotent.
func (ic *Interconnect) CentralEnsure(ctx context.Context) error {
	unlock, err := ic.lock(ctx, "zone-central")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(ic.retiredMarker()); err != nil {
		return nil // running
	}
	c, err := ic.Lab.Commands()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := ic.startCentral(ctx, c); err != nil {
		return err
	}
	return os.Remove(ic.retiredMarker())
}

// startCentral starts the central zone's databases, ovn-northd and ovn-ic,
// and makes its logical topology and its transit port.
func (ic *Interconnect) startCentral(ctx context.Context, c Commands) error {
	dir := ic.OVNDir
	ic.Lab.StopDaemons("ovsdb-server:ovn-nb", "ovsdb-server:ovn-sb", "ovn-northd", "ovn-ic:"+GlobalZone) // leftovers of a half-done attempt
	if err := ic.startDB(ctx, c, "ovsdb-server:ovn-nb", dir, "nb", ovsdist.Schema("ovn-nb")); err != nil {
		return err
	}
	if err := ic.startDB(ctx, c, "ovsdb-server:ovn-sb", dir, "sb", ovsdist.Schema("ovn-sb")); err != nil {
		return err
	}
	if err := ic.startNorthd(ctx, c, GlobalZone, "ovn-northd", []string{"OVN_RUNDIR=" + dir, "OVS_RUNDIR=" + dir}); err != nil {
		return err
	}
	nb, _ := ic.centralDBs()
	if _, err := nbctl(ctx, c, nb, append([]string{"lr-add", ClusterRouter, "--"}, VMSwitchArgs()...)...); err != nil {
		return err
	}
	if err := ic.startIC(ctx, c, GlobalZone, dir); err != nil {
		return err
	}
	return ic.joinTransit(ctx, c, GlobalZone, "")
}

// CentralRetire stops the central zone once no node is in it: its transit
// port first (its routes are withdrawn), then ovn-ic, ovn-northd and the
// central NB and SB.
func (ic *Interconnect) CentralRetire(ctx context.Context) error {
	unlock, err := ic.lock(ctx, "zone-central")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(ic.retiredMarker()); err == nil {
		return nil
	}
	c, err := ic.Lab.Commands()
	if err != nil {
		return err
	}
	defer c.Close()
	nodes, err := ic.GlobalNodes(ctx, c)
	if err != nil {
		return err
	}
	if len(nodes) > 0 {
		return fmt.Errorf("the central zone still has node(s) %s: move them out first", strings.Join(nodes, ", "))
	}
	nb, _ := ic.centralDBs()
	if _, err := nbctl(ctx, c, nb, "--if-exists", "lsp-del", "ts-"+GlobalZone, "--", "--if-exists", "lrp-del", "rtr-ts-"+GlobalZone); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	ic.Lab.StopDaemons("ovn-ic:"+GlobalZone, "ovn-northd", "ovsdb-server:ovn-nb", "ovsdb-server:ovn-sb")
	return os.WriteFile(ic.retiredMarker(), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}
