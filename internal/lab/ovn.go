package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"netshift.io/netshift/internal/lab/ovnic"
	"netshift.io/netshift/internal/ovs/ovsdist"
)

// The OVN mode is routed as ovnic lays it out: a switch per node behind the
// cluster router, and the VM switch that spans every node.
const (
	vmSwitch = ovnic.VMSwitch
	// VMSubnet is the spanning switch's subnet.
	VMSubnet = "198.18.250.0/24"
)

func (s *State) ovnDir() string { return s.Path("ovn") }

// NBDB and SBDB are the central OVN databases' unix sockets.
func (s *State) NBDB() string { return "unix:" + filepath.Join(s.ovnDir(), "nb.sock") }
func (s *State) SBDB() string { return "unix:" + filepath.Join(s.ovnDir(), "sb.sock") }

func (s *State) nbctl(ctx context.Context, sh *shell, args ...string) (string, error) {
	return sh.run(ctx, nil, "ovn-nbctl", append([]string{"--db=" + s.NBDB(), "--timeout=20"}, args...)...)
}

// centralRemotes are the central databases' remotes for netshift's operator,
// a pod of a real node: SSL on the machine's address in the underlay, as a
// cluster's OVN databases listen on a control-plane node's (ssl: endpoints,
// a client certificate asked of every client). The lab's own tools, ovn-northd
// and every ovn-controller reach them through their unix sockets (the lab
// machine's file system), so no plain TCP remote is left.
func (s *State) centralRemotes(db string) []string {
	port := map[string]string{"nb": CentralNBPort, "sb": CentralSBPort}[db]
	if port == "" {
		return nil
	}
	return append(s.centralSSLArgs(db), "--remote=pssl:"+port+":"+hostIP)
}

// The central databases' SSL ports on the machine's underlay address (real nodes).
const (
	CentralNBPort = "6641"
	CentralSBPort = "6642"
)

// buildOVN starts the central NB and SB databases (in the root namespace,
// on their unix sockets and, for the operator, SSL on the underlay address)
// and ovn-northd, one ovn-controller per node inside the node's namespace,
// and the logical topology.
func (s *State) buildOVN(ctx context.Context, sh *shell, progress func(string, ...any)) error {
	dir := s.ovnDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := s.writeOVNPKI(); err != nil {
		return err
	}
	env := []string{"OVN_RUNDIR=" + dir, "OVS_RUNDIR=" + dir}
	for _, db := range []string{"nb", "sb"} {
		file := filepath.Join(dir, db+".db")
		if _, err := sh.run(ctx, nil, "ovsdb-tool", "create", file, ovsdist.Schema("ovn-"+db)); err != nil {
			return err
		}
		pid := filepath.Join(dir, db+".pid")
		args := append([]string{file, "--remote=punix:" + filepath.Join(dir, db+".sock"), "--pidfile=" + pid, "--unixctl=" + filepath.Join(dir, db+".ctl"),
			"--log-file=" + filepath.Join(dir, db+".log"), "--detach"}, s.centralRemotes(db)...)
		if err := s.startDaemon(ctx, sh, "ovsdb-server:ovn-"+db, "", env, pid, "ovsdb-server", args...); err != nil {
			return err
		}
	}
	pid := filepath.Join(dir, "northd.pid")
	if err := s.startDaemon(ctx, sh, "ovn-northd", "", env, pid, "ovn-northd", "--ovnnb-db="+s.NBDB(), "--ovnsb-db="+s.SBDB(),
		"--pidfile="+pid, "--unixctl="+filepath.Join(dir, "northd.ctl"), "--log-file="+filepath.Join(dir, "northd.log"), "--detach"); err != nil {
		return err
	}
	progress("OVN: central NB and SB databases and ovn-northd")

	args := []string{"lr-add", ovnic.ClusterRouter}
	for _, n := range s.Topology.Nodes {
		args = append(append(args, "--"), ovnic.RouterSwitchArgs("ls-"+n.Name, "rtr-"+n.Name, ovnic.RouterMAC(n.Index), fmt.Sprintf("198.18.%d.1/24", n.Index))...)
	}
	args = append(append(args, "--"), ovnic.VMSwitchArgs()...)
	if _, err := s.nbctl(ctx, sh, args...); err != nil {
		return fmt.Errorf("OVN logical topology: %w", err)
	}

	for _, n := range s.Topology.Nodes {
		if _, err := s.vsctl(ctx, sh, n.Name, "set", "open", ".",
			"external_ids:system-id="+n.Name, "external_ids:hostname="+n.Name,
			"external_ids:ovn-remote="+s.SBDB(), "external_ids:ovn-encap-type=geneve",
			"external_ids:ovn-encap-ip="+n.UnderlayIP, "external_ids:ovn-bridge=br-int",
			"external_ids:ovn-bridge-datapath-type=netdev"); err != nil {
			return fmt.Errorf("node %s: OVN settings: %w", n.Name, err)
		}
		if err := s.startOVNController(ctx, sh, n); err != nil {
			return err
		}
	}
	progress("OVN: ovn-controller on every node, router %s, a switch per node and %s (%s)", ovnic.ClusterRouter, vmSwitch, VMSubnet)
	return nil
}

// startOVNController starts the node's ovn-controller, which reads where to
// connect from the node's Open_vSwitch record.
func (s *State) startOVNController(ctx context.Context, sh *shell, n NodeSpec) error {
	nd := s.nodeDir(n.Name)
	pid := filepath.Join(nd, "ovn-controller.pid")
	if err := s.startDaemon(ctx, sh, "ovn-controller:"+n.Name, n.Netns, append(s.ovsEnv(n.Name), "OVN_RUNDIR="+nd), pid,
		"ovn-controller", s.OVSDB(n.Name), "--pidfile="+pid,
		"--log-file="+filepath.Join(nd, "ovn-controller.log"), "--detach"); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}
