package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab/ovnic"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs/ovsdist"
)

// Requirements lists what `lab up` needs on the machine, with the package
// that brings it.
func Requirements(ovn bool) error {
	if os.Geteuid() != 0 {
		return &MissingError{"the lab needs root (network namespaces, Open vSwitch)"}
	}
	dist, err := ovsdist.Use()
	if err != nil {
		return &MissingError{err.Error()}
	}
	need := map[string]string{"ip": "iproute2", "ethtool": "ethtool"}
	for _, b := range []string{"ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovsdb-tool"} {
		need[b] = "openvswitch-switch " + dist.OVS + " in " + dist.Root
	}
	if ovn {
		for _, b := range []string{"ovn-northd", "ovn-controller", "ovn-nbctl", "ovn-sbctl"} {
			need[b] = "ovn-host " + dist.OVN + " in " + dist.Root
		}
	}
	var missing []string
	for bin, pkg := range need {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", bin, pkg))
		}
	}
	if len(missing) > 0 {
		return &MissingError{"the lab needs " + strings.Join(missing, ", ") + ": run hack/setup.sh as root"}
	}
	return nil
}

// MissingError says the machine lacks something the lab needs.
type MissingError struct{ Reason string }

func (m *MissingError) Error() string { return m.Reason }

// Up builds the lab and starts its supervisor; on any failure it removes
// what it had created.
func Up(ctx context.Context, o Options, binary string, out io.Writer) (s *State, err error) {
	o.Derive()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := Requirements(o.OVN || o.OVNKubernetes != ""); err != nil {
		return nil, err
	}
	began := time.Now()
	progress := func(format string, args ...any) {
		fmt.Fprintf(out, "[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	s, err = newState(o, Plan(o))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && os.Getenv("NETSHIFT_LAB_KEEP_FAILED") != "" {
			progress("failed: %v; kept for inspection (NETSHIFT_LAB_KEEP_FAILED): lab down removes it", err)
			return
		}
		if err != nil {
			if tail := lastErrors(s.Path("neutron", "neutron-server.log"), 12); tail != "" {
				progress("neutron-server.log, its last errors (the log goes with the lab):\n%s", tail)
			}
			progress("failed; removing what was created: %v", err)
			if derr := s.teardown(context.WithoutCancel(ctx), out); derr != nil {
				err = errors.Join(err, derr)
			}
		}
	}()
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return s, err
	}
	defer sh.close()
	if err := s.buildNetwork(ctx, sh, progress); err != nil {
		return s, err
	}
	if o.Neutron {
		if err := s.startNeutron(ctx); err != nil {
			return s, fmt.Errorf("lab Neutron: %w", err)
		}
		progress("Neutron: neutron-server (ML2/OVN) on %s, network pods %s, project %s", s.Neutron.URL, neutronCIDR, neutronProject)
		if err := s.makeTrunkNodes(ctx, sh); err != nil {
			return s, fmt.Errorf("lab Neutron: %w", err)
		}
		for node, parent := range s.Neutron.TrunkParents {
			progress("Neutron: node %s is a VM on trunk parent port %s (bridge %s)", node, parent, TrunkBridge)
		}
	}
	ic := s.Interconnect()
	if o.OVN && o.Zones != ZonesLegacy {
		if err := ic.Build(ctx, shellCommands{sh, s}); err != nil {
			return s, fmt.Errorf("OVN interconnect: %w", err)
		}
		progress("OVN interconnect: IC databases, transit switch %s, the global zone's ovn-ic", ovnic.TransitSwitch)
	}
	if o.OVN && o.Zones == ZonesMulti {
		// Built as one zone, then each node moved into its own (the network settled first).
		for _, n := range s.Topology.Nodes {
			if err := ic.MoveZone(ctx, n.Name, n.Name, progress); err != nil {
				return s, err
			}
		}
		if err := ic.CentralRetire(ctx); err != nil {
			return s, err
		}
		progress("multizone: every node in its own zone, the central zone retired")
	}
	progress("starting the supervisor: kube-apiserver, etcd, kube-controller-manager, kube-scheduler; on every node containerd, the kubelet and kube-proxy; netshift from config/lab; the probe's pods")
	if err := s.startSupervisor(ctx, binary); err != nil {
		return s, err
	}
	if err := s.waitConnected(ctx, 100*time.Second); err != nil {
		return s, err
	}
	progress("every node's pods reach a pod on every other node")
	if err := s.annotateTrunkNodes(ctx); err != nil {
		return s, err
	}
	pods := o.Nodes * o.PodsPerNode
	progress("lab %s is up: %d nodes, %d pods, %s%s; KUBECONFIG=%s", o.Name, o.Nodes, pods, o.Tunnel,
		map[bool]string{true: " (OVN)", false: ""}[o.OVN], s.Kubeconfig)
	return s, nil
}

func (s *State) startSupervisor(ctx context.Context, binary string) error {
	logf, err := os.Create(s.Path("supervisor.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(binary, "lab", "serve", "--name", s.Options.Name)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives `lab up`
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	limit := 6 * time.Minute // images imported into every node, kubelets, netshift installed, pods started
	deadline := time.After(limit)
	for {
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("the lab supervisor exited (%v); its log %s ends:\n%s", err, logf.Name(), lastLines(string(tail), 15))
		case <-deadline:
			return fmt.Errorf("the lab supervisor was not ready after %s; see %s", limit, logf.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if err := s.reload(); err == nil && s.Ready {
			return nil
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitConnected waits until a pod of every node reaches a pod on every
// other node over TCP (OVS learns, tunnels come up, ovn-controller binds).
//
// In OVN labs a pod has been seen, rarely and only after other labs ran,
// to stay unreachable from the others: the lab's stand-in network plugin
// then records what OVN holds of it (connectivity.log), has every
// ovn-controller recompute, and at last replaces the pod (its DaemonSet
// makes a new one through the CNI chain), as an operator would. When the
// new pod of that node is unreachable too, the node's ovn-controller is
// restarted: it claims its chassis and its ports again. A lab that stays
// unconnected fails with the end of connectivity.log in its error.
func (s *State) waitConnected(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var since time.Time // of the failures since the last healing step
	recomputed := false
	replaced := map[string]bool{} // nodes whose unreachable pod was replaced
	for {
		to, err := s.connected(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			if log, rerr := os.ReadFile(s.Path("connectivity.log")); rerr == nil {
				return fmt.Errorf("after %s: %w; connectivity.log ends:\n%s", timeout, err, lastLines(string(log), 60))
			}
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		if since.IsZero() {
			since = time.Now()
		}
		if s.Options.OVN && to.Name != "" {
			switch waited := time.Since(since); {
			case waited > 35*time.Second && replaced[to.Node]:
				s.restartOVNController(ctx, to, err)
				since, recomputed = time.Time{}, false
			case waited > 35*time.Second:
				s.replacePod(ctx, to, err)
				replaced[to.Node] = true
				since, recomputed = time.Time{}, false
			case waited > 20*time.Second && !recomputed:
				s.recordOVN(ctx, PodNamespace+"_"+to.Name, to.Node, "pod "+to.Name)
				fmt.Fprintf(os.Stderr, "lab %s: pod %s unreachable for 20 s (%v): OVN's view in %s; every ovn-controller recomputes\n",
					s.Options.Name, to.Name, err, s.Path("connectivity.log"))
				recomputed = true
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restartOVNController restarts the ovn-controller of the node of a pod
// that stayed unreachable after it was replaced.
func (s *State) restartOVNController(ctx context.Context, to PodSpec, cause error) {
	sh, err := newShell(s.Path("connectivity.log"))
	if err != nil {
		return
	}
	defer sh.close()
	s.stopRoles("ovn-controller:" + to.Node)
	if n, ok := s.Topology.Node(to.Node); ok {
		err = s.startOVNController(ctx, sh, n)
	}
	fmt.Fprintf(os.Stderr, "lab %s: pod %s on %s unreachable for 35 s after its pod was replaced (%v): the node's ovn-controller restarted (%v)\n",
		s.Options.Name, to.Name, to.Node, cause, err)
}

// recordOVN writes what OVN holds of an unreachable logical port (bound on
// node) into the lab's connectivity.log and has every node's ovn-controller
// recompute its flows.
func (s *State) recordOVN(ctx context.Context, port, node, what string) {
	sh, err := newShell(s.Path("connectivity.log"))
	if err != nil {
		return
	}
	defer sh.close()
	_, _ = sh.run(ctx, nil, "echo", "unreachable: "+what)
	_, _ = sh.run(ctx, nil, "ovn-sbctl", "--db="+s.SBDB(), "--timeout=10", "find", "port_binding", "logical_port="+port)
	_, _ = sh.run(ctx, nil, "ovn-nbctl", "--db="+s.NBDB(), "--timeout=10", "show")
	_, _ = sh.run(ctx, nil, "ovn-sbctl", "--db="+s.SBDB(), "--timeout=10", "show")
	for _, n := range s.Topology.Nodes {
		// Every OVS interface claiming the logical port, on every node: a stale
		// sandbox's interface left with the same iface-id would compete for the binding.
		_, _ = sh.run(ctx, s.ovsEnv(n.Name), "ovs-vsctl", "--timeout=10", "--columns=name,ofport,external_ids", "find", "interface", "external_ids:iface-id="+port)
		if n.Name == node {
			_, _ = sh.run(ctx, nil, "tail", "-n", "40", filepath.Join(s.nodeDir(n.Name), "ovn-controller.log"))
		}
		_, _ = sh.run(ctx, append(s.ovsEnv(n.Name), "OVN_RUNDIR="+s.nodeDir(n.Name)), "ovn-appctl", "-t", "ovn-controller", "recompute")
	}
}

// replacePod deletes a pod that stayed unreachable; its DaemonSet replaces it.
func (s *State) replacePod(ctx context.Context, to PodSpec, cause error) {
	c, err := s.Client()
	if err != nil {
		return
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: PodNamespace, Name: to.Name}}
	err = c.Delete(ctx, pod, client.GracePeriodSeconds(0))
	fmt.Fprintf(os.Stderr, "lab %s: pod %s unreachable for 35 s (%v): replaced (%v)\n", s.Options.Name, to.Name, cause, err)
}

// connected checks, once, that each node's first pod reaches a pod on every
// other node; on failure it names the pod that could not be reached.
func (s *State) connected(ctx context.Context) (PodSpec, error) {
	pods, err := s.Pods(ctx)
	if err != nil {
		return PodSpec{}, err
	}
	first := map[string]PodSpec{}
	for _, p := range pods {
		if _, ok := first[p.Node]; !ok && p.Netns != "" {
			first[p.Node] = p
		}
	}
	for _, from := range first {
		for _, to := range first {
			if from.Node == to.Node {
				continue
			}
			if err := TCPCheck(from, to, time.Second); err != nil {
				return to, fmt.Errorf("pod %s on %s cannot reach pod %s on %s over TCP: %w", from.Name, from.Node, to.Name, to.Node, err)
			}
		}
	}
	return PodSpec{}, nil
}

// TCPCheck opens a listener in to's namespace and connects to it from from's
// namespace, exchanging a few bytes.
func TCPCheck(from, to PodSpec, timeout time.Duration) error {
	var l net.Listener
	if err := netdev.InNetns(to.Netns, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(to.IP, "0"))
		return err
	}); err != nil {
		return err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err == nil {
			_, _ = c.Write(buf)
		}
	}()
	var conn net.Conn
	if err := netdev.InNetns(from.Netns, func() (err error) {
		conn, err = net.DialTimeout("tcp", l.Addr().String(), timeout)
		return err
	}); err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	return nil
}
