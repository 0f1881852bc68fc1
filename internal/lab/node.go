package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"netshift.io/netshift/internal/ovs/ovsdist"
)

// nodeDir is where a node's OVS database, sockets, pid files and logs live.
func (s *State) nodeDir(node string) string { return s.Path("nodes", node) }

// OVSDB is the unix socket of the node's ovsdb-server: what its agent talks to.
func (s *State) OVSDB(node string) string { return "unix:" + filepath.Join(s.nodeDir(node), "db.sock") }

func (s *State) ovsEnv(node string) []string {
	d := s.nodeDir(node)
	return []string{"OVS_RUNDIR=" + d, "OVS_LOGDIR=" + d, "OVS_DBDIR=" + d}
}

// vsctl runs ovs-vsctl against the node's own database.
func (s *State) vsctl(ctx context.Context, sh *shell, node string, args ...string) (string, error) {
	return sh.run(ctx, s.ovsEnv(node), "ovs-vsctl", append([]string{"--db=" + s.OVSDB(node), "--timeout=20"}, args...)...)
}

// addNetns creates a namespace, recording it first so that a crash right
// after still gets it removed.
func (s *State) addNetns(ctx context.Context, sh *shell, name string) error {
	if err := s.record(func() { s.Netns = append(s.Netns, name) }); err != nil {
		return err
	}
	if err := sh.ip(ctx, "netns", "add", name); err != nil {
		return err
	}
	return sh.ip(ctx, "-n", name, "link", "set", "lo", "up")
}

// startDaemon starts an OVS or OVN daemon with --detach inside netns and
// records the process from its pid file.
func (s *State) startDaemon(ctx context.Context, sh *shell, role, netns string, env []string, pidfile, bin string, args ...string) error {
	var err error
	if netns == "" {
		_, err = sh.run(ctx, env, bin, args...)
	} else {
		_, err = sh.inNetns(ctx, netns, env, bin, args...)
	}
	if err != nil {
		return err
	}
	pid, err := readPidfile(pidfile)
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	p, err := Identify(role, pid)
	if err != nil {
		return fmt.Errorf("%s (pid %d) exited at once; see its log: %w", role, pid, err)
	}
	return s.record(func() { s.Processes = append(s.Processes, p) })
}

// stopRoles stops the lab's daemons with these roles and forgets them: a
// zone that is gone is not a daemon that died.
func (s *State) stopRoles(roles ...string) {
	want := map[string]bool{}
	for _, r := range roles {
		want[r] = true
	}
	_ = s.reload()
	for _, p := range s.Processes {
		if want[p.Role] {
			p.Stop(3 * time.Second)
		}
	}
	_ = s.record(func() {
		kept := s.Processes[:0]
		for _, p := range s.Processes {
			if !want[p.Role] || p.Alive() {
				kept = append(kept, p)
			}
		}
		s.Processes = kept
	})
}

// readPidfile is the pid a daemon wrote to its pid file.
func readPidfile(pidfile string) (int, error) {
	data, err := os.ReadFile(pidfile)
	if err != nil {
		return 0, fmt.Errorf("no pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s: %w", pidfile, err)
	}
	return pid, nil
}

// buildNode creates the node's namespace, its underlay link, its own
// ovsdb-server and ovs-vswitchd (userspace datapath), its gateway bridge
// (br-phy, or breth0 for OVN-Kubernetes) with the underlay address, and br-int.
func (s *State) buildNode(ctx context.Context, sh *shell, n NodeSpec) error {
	o := s.Options
	dir := s.nodeDir(n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := s.writeNodeFiles(n.Name); err != nil {
		return err
	}
	if err := s.addNetns(ctx, sh, n.Netns); err != nil {
		return err
	}
	mtu := strconv.Itoa(o.UnderlayMTU)
	ul := s.Topology.UnderlayNetns
	for _, args := range [][]string{
		{"-n", ul, "link", "add", n.UnderlayPort, "mtu", mtu, "type", "veth", "peer", "name", "eth0", "netns", n.Netns},
		{"-n", ul, "link", "set", n.UnderlayPort, "master", "ulbr", "up"},
		// OVS owns eth0: without arp off the node's kernel answers ARP for the gateway bridge's address on
		// it with the wrong MAC and one direction of a tunnel dies silently.
		{"-n", n.Netns, "link", "set", "eth0", "mtu", mtu, "arp", "off", "up"},
	} {
		if err := sh.ip(ctx, args...); err != nil {
			return fmt.Errorf("node %s: underlay: %w", n.Name, err)
		}
	}
	db := filepath.Join(dir, "conf.db")
	if _, err := sh.run(ctx, nil, "ovsdb-tool", "create", db, ovsdist.Schema("vswitch")); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	env := s.ovsEnv(n.Name)
	if err := s.startDaemon(ctx, sh, "ovsdb-server:"+n.Name, n.Netns, env, filepath.Join(dir, "ovsdb-server.pid"),
		"ovsdb-server", db, "--remote=punix:"+filepath.Join(dir, "db.sock"), "--pidfile="+filepath.Join(dir, "ovsdb-server.pid"),
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(dir, "ovsdb-server.log"), "--detach"); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	pid, err := readPidfile(filepath.Join(dir, "ovsdb-server.pid"))
	if err == nil {
		err = setSessionNice(pid, ovsdbServerNice)
	}
	if err != nil {
		return fmt.Errorf("node %s: ovsdb-server: %w", n.Name, err)
	}
	if _, err := s.vsctl(ctx, sh, n.Name, "--no-wait", "init"); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	if err := s.startVswitchd(ctx, sh, n); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	gw := s.gatewayBridge()
	if _, err := s.vsctl(ctx, sh, n.Name,
		"add-br", gw, "--", "set", "bridge", gw, "datapath_type=netdev",
		"--", "set", "interface", gw, "mtu_request="+mtu,
		"--", "add-port", gw, "eth0",
		"--", "add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev"); err != nil {
		return fmt.Errorf("node %s: bridges: %w", n.Name, err)
	}
	if err := waitLink(ctx, sh, n.Netns, gw); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	for _, args := range [][]string{
		{"-n", n.Netns, "addr", "add", n.UnderlayIP + "/24", "dev", gw},
		{"-n", n.Netns, "link", "set", gw, "up"},
	} {
		if err := sh.ip(ctx, args...); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if s.runsOVNKubernetes() {
		return s.prepareForOVNKubernetes(ctx, sh, n)
	}
	return nil
}

// startVswitchd starts the node's ovs-vswitchd. Under the real OVN-Kubernetes
// it runs as ovs-ctl runs it on a node, with a monitor that starts it again
// after a crash (Debian's 3.1.0 asserts in its userspace conntrack under
// ovnkube's load-balancer flows), and its control socket at its default
// name, ovs-vswitchd.PID.ctl, where ovnkube's ovs-appctl looks for it.
func (s *State) startVswitchd(ctx context.Context, sh *shell, n NodeSpec) error {
	dir := s.nodeDir(n.Name)
	pidfile := filepath.Join(dir, "ovs-vswitchd.pid")
	args := []string{s.OVSDB(n.Name), "--pidfile=" + pidfile, "--log-file=" + filepath.Join(dir, "ovs-vswitchd.log"), "--detach"}
	if !s.runsOVNKubernetes() {
		return s.startDaemon(ctx, sh, "ovs-vswitchd:"+n.Name, n.Netns, s.ovsEnv(n.Name), pidfile, "ovs-vswitchd",
			append(args, "--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"))...)
	}
	if err := s.startDaemon(ctx, sh, "ovs-vswitchd:"+n.Name, n.Netns, s.ovsEnv(n.Name), pidfile, "ovs-vswitchd", append(args, "--monitor")...); err != nil {
		return err
	}
	pid, err := readPidfile(pidfile)
	if err != nil {
		return err
	}
	monitor, err := Identify(vswitchdMonitorRole+n.Name, parentPid(pid))
	if err != nil {
		return fmt.Errorf("ovs-vswitchd's monitor: %w", err)
	}
	return s.record(func() { s.Processes = append(s.Processes, monitor) })
}

// vswitchdMonitorRole names the process that restarts a node's ovs-vswitchd.
const vswitchdMonitorRole = "ovs-vswitchd-monitor:"

// vswitchdControl is what ovs-appctl -t takes to reach the node's
// ovs-vswitchd (with the node's OVS_RUNDIR): its explicit socket, or, under
// OVN-Kubernetes, its name, found through its pid file after any restart.
func (s *State) vswitchdControl(node string) string {
	if s.runsOVNKubernetes() {
		return "ovs-vswitchd"
	}
	return s.Path("nodes", node, "ovs-vswitchd.ctl")
}

// parentPid is a process's parent, from /proc (0 when it cannot be read).
func parentPid(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields after it are plain.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// addTunnels joins the node's br-int to every other node: a full mesh whose
// ports are protected (split horizon), so the NORMAL action never forwards a
// broadcast from one tunnel into another and loops it between nodes.
func (s *State) addTunnels(ctx context.Context, sh *shell, n NodeSpec) error {
	var args []string
	for _, peer := range s.Topology.Nodes {
		if peer.Name == n.Name {
			continue
		}
		port := fmt.Sprintf("tun%d", peer.Index)
		args = append(args, "--", "add-port", "br-int", port,
			"--", "set", "port", port, "protected=true",
			"--", "set", "interface", port, "type="+string(s.Options.Tunnel), "options:remote_ip="+peer.UnderlayIP)
	}
	if len(args) == 0 {
		return nil
	}
	_, err := s.vsctl(ctx, sh, n.Name, args[1:]...)
	if err != nil {
		return fmt.Errorf("node %s: tunnels: %w", n.Name, err)
	}
	return nil
}

func waitLink(ctx context.Context, sh *shell, netns, link string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := sh.ip(ctx, "-n", netns, "link", "show", link); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("link %s did not appear in %s", link, netns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
