package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/poll"
	"netshift.io/netshift/internal/lab/vm"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
)

// A migration's side in the cluster and in OVN: the VM's pods and logical
// port, and the waits for what netshift and OVN do with them.

func (m *migration) ensureNetns(ctx context.Context, name string) error {
	for _, n := range m.s.Netns {
		if n == name {
			return nil
		}
	}
	return m.s.addNetns(ctx, m.sh, name)
}

// startPeer builds the VM's peer on the third node (a pod on ls-vm, plugged
// by its agent) and its echo server.
func (m *migration) startPeer(ctx context.Context) (func(), error) {
	ns := fmt.Sprintf("%s%s-vmpeer", NamePrefix, m.s.Options.Name)
	if err := m.ensureNetns(ctx, ns); err != nil {
		return nil, err
	}
	id := string(uuid.NewUUID())
	port := plug.Port{ID: id, MAC: peerMAC}.WithDefaults("")
	if err := m.addLogicalPort(ctx, id, peerMAC, peerIP); err != nil {
		return nil, err
	}
	pod, err := m.createPod(ctx, "vm-peer", m.peerOn.Name, port, "")
	if err != nil {
		return nil, err
	}
	if err := m.attach(ctx, m.peerOn, port.Tap, ns, peerMAC, peerIP, vmMAC, vmIP); err != nil {
		return nil, err
	}
	if _, err := m.waitPort(ctx, pod.Name, func(c corev1.PodCondition) bool { return c.Status == corev1.ConditionTrue }); err != nil {
		return nil, err
	}
	if err := m.waitRunning(ctx, pod.Name); err != nil {
		return nil, err
	}
	if m.echo, err = vm.OpenEcho(ns); err != nil {
		return nil, err
	}
	m.peerNS = ns
	return func() {
		unix.Close(m.echo)
		_ = m.c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		_ = m.sh.ip(context.Background(), "-n", m.peerOn.Netns, "link", "del", port.Tap)
		m.dropPort(context.Background(), id)
	}, nil
}

// reset removes every VM pod, VM logical port and VM tap of this lab.
func (m *migration) reset(ctx context.Context) error {
	if err := m.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(PodNamespace), client.MatchingLabels{"app": "vm"},
		client.GracePeriodSeconds(0)); err != nil {
		return fmt.Errorf("remove VM pods: %w", err)
	}
	// Their sandboxes too, and those of pods deleted before (the last run's
	// peer): a new pod of the same name would share its logical port with them.
	vmPods := func(lport string) bool { return strings.HasPrefix(lport, PodNamespace+"_vm-") }
	for _, n := range m.s.Topology.Nodes {
		if err := m.waitSandboxesGone(ctx, n, "the VM pods", vmPods); err != nil {
			return err
		}
	}
	out, err := m.s.nbctl(ctx, m.sh, "lsp-list", vmSwitch)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line) // UUID (NAME)
		if len(f) == 2 && f[1] != "(stor-"+vmSwitch+")" {
			if _, err := m.s.nbctl(ctx, m.sh, "--if-exists", "lsp-del", strings.Trim(f[1], "()")); err != nil {
				return err
			}
		}
	}
	if err := m.editOwnedPorts(ctx, func([]string) []string { return nil }); err != nil {
		return err
	}
	// The namespace VM's taps are veths, QEMU's tuntaps (which outlive it).
	for _, n := range m.s.Topology.Nodes {
		for _, kind := range []string{"veth", "tun"} {
			out, err := m.sh.run(ctx, nil, "ip", "-n", n.Netns, "-o", "link", "show", "type", kind)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line) // "7: tapXXXX@if2: <...>"
				if len(f) > 1 && strings.HasPrefix(f[1], "tap") {
					if err := m.sh.ip(ctx, "-n", n.Netns, "link", "del", strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (m *migration) addLogicalPort(ctx context.Context, id, mac, ip string) error {
	addr := mac + " " + ip
	// Recorded for the VM pods' namespace: the operator binds the port to no other namespace's pod.
	if _, err := m.s.nbctl(ctx, m.sh, "lsp-add", vmSwitch, id, "--", "lsp-set-addresses", id, addr, "--", "lsp-set-port-security", id, addr,
		"--", "set", "logical_switch_port", id, "external_ids:"+plug.NamespaceKey+"="+PodNamespace); err != nil {
		return fmt.Errorf("logical port %s: %w", id, err)
	}
	return m.ownPort(ctx, id)
}

// ownPort lists the port among the VM pods' namespace's ports, as its admin
// does (netshift.io/port-ids): the agents plug no port a namespace does not
// own. dropPort takes it out with the port.
func (m *migration) ownPort(ctx context.Context, id string) error {
	return m.editOwnedPorts(ctx, func(ids []string) []string { return append(ids, id) })
}

// dropPort deletes a VM logical port and takes it out of the namespace's ports.
func (m *migration) dropPort(ctx context.Context, id string) {
	_, _ = m.s.nbctl(ctx, m.sh, "--if-exists", "lsp-del", id)
	_ = m.editOwnedPorts(ctx, func(ids []string) []string { return slices.DeleteFunc(ids, func(s string) bool { return s == id }) })
}

func (m *migration) editOwnedPorts(ctx context.Context, edit func([]string) []string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ns corev1.Namespace
		if err := m.c.Get(ctx, client.ObjectKey{Name: PodNamespace}, &ns); err != nil {
			return err
		}
		var ids []string
		if v := ns.Annotations[plug.PortIDsAnnotation]; v != "" {
			ids = strings.Split(v, ",")
		}
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[plug.PortIDsAnnotation] = strings.Join(edit(ids), ",")
		if err := m.c.Update(ctx, &ns); err != nil {
			return fmt.Errorf("namespace %s: annotation %s: %w", PodNamespace, plug.PortIDsAnnotation, err)
		}
		return nil
	})
}

// attach makes the VM's interface appear on a node: the tap in the node's
// namespace and eth0 (MAC, address, the peer's ARP entry, which a resumed
// VM's kernel still has) in the VM's; then it waits until the node's vswitchd
// has attached the tap, as a hypervisor's plug returns before the VM resumes,
// and has revalidated its cached datapath flows: a target activated ahead
// already receives the peers' datagrams, and a flow cached before the tap
// existed would send the first answers to the resumed VM where the tap was
// not, until vswitchd's revalidators ran (the first 3 datagrams after a
// resume, once in 60 to 120 migrations here).
func (m *migration) attach(ctx context.Context, n NodeSpec, tap, vmNS, mac, ip, neighMAC, neighIP string) error {
	mtu := strconv.Itoa(m.s.Options.MTU)
	for _, args := range [][]string{
		{"-n", n.Netns, "link", "add", tap, "mtu", mtu, "type", "veth", "peer", "name", "eth0", "netns", vmNS},
		{"-n", vmNS, "link", "set", "eth0", "address", mac, "mtu", mtu, "up"},
		{"-n", vmNS, "addr", "add", ip + "/24", "dev", "eth0"},
		{"-n", vmNS, "neigh", "replace", neighIP, "lladdr", neighMAC, "dev", "eth0", "nud", "permanent"},
		{"-n", n.Netns, "link", "set", tap, "arp", "off", "up"},
	} {
		if err := m.sh.ip(ctx, args...); err != nil {
			return fmt.Errorf("VM interface on %s: %w", n.Name, err)
		}
	}
	if _, err := m.sh.inNetns(ctx, vmNS, nil, "ethtool", "-K", "eth0", "tx", "off"); err != nil {
		return err
	}
	if err := m.upOnceAttached(ctx, n, tap); err != nil {
		return err
	}
	_, err := m.sh.run(ctx, m.s.ovsEnv(n.Name), "ovs-appctl", "-t", m.s.vswitchdControl(n.Name), "revalidator/wait")
	return err
}

// upOnceAttached waits until vswitchd has attached a VM's tap, then sets the
// tap up again. The userspace datapath sets a port it attaches promiscuous
// from the flags it read when it opened the device: a tap brought up in
// between (netshift's agent names the tap in OVS before the hypervisor
// creates it) is left down, and the VM reaches nothing (once in some 20
// rounds here). A hypervisor that creates the tap and sets it up before the
// tap is in OVS, as libvirt does, never meets it.
func (m *migration) upOnceAttached(ctx context.Context, n NodeSpec, tap string) error {
	if err := ovs.WithSwitch(ctx, m.s.OVSDB(n.Name), func(db *ovs.Switch) error {
		return poll.Until(ctx, 2*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
			ifaces, err := db.Interfaces(ctx, tap)
			return err == nil && ifaces[tap].OFPort > 0, err
		}, func() error {
			return fmt.Errorf("node %s: vswitchd did not attach %s within 20s (is the pod's port plugged?)", n.Name, tap)
		})
	}); err != nil {
		return err
	}
	if err := m.sh.ip(ctx, "-n", n.Netns, "link", "set", tap, "up"); err != nil {
		return fmt.Errorf("node %s: set the VM's tap %s up again: %w", n.Name, tap, err)
	}
	return nil
}

func (m *migration) createPod(ctx context.Context, name, node string, p plug.Port, targetOf string) (*corev1.Pod, error) {
	spec := fmt.Sprintf(`{"id":%q,"mac":%q}`, p.ID, p.MAC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: PodNamespace, Labels: map[string]string{"app": "vm"},
		Annotations: map[string]string{plug.PortSpecAnnotation: spec}},
		// A VM's launcher is a real pod: the lab's workload image, which every node has, ended
		// at once when deleted.
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "vm", Image: images.WorkloadRef}}}}
	pod.Spec.TerminationGracePeriodSeconds = new(int64)
	pod.Spec.Containers[0].Command = []string{"/bin/sleep", "2147483647"}
	if targetOf != "" {
		pod.Annotations[plug.MigrationTargetAnnotation] = targetOf
	}
	if err := m.c.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("pod %s on %s: %w", name, node, err)
	}
	return pod, nil
}

// waitPort waits until the pod's network-ready condition satisfies ok.
func (m *migration) waitPort(ctx context.Context, pod string, ok func(corev1.PodCondition) bool) (corev1.PodCondition, error) {
	deadline := time.Now().Add(20 * time.Second)
	var last corev1.PodCondition
	for {
		var p corev1.Pod
		if err := m.c.Get(ctx, types.NamespacedName{Namespace: PodNamespace, Name: pod}, &p); err != nil && !apierrors.IsNotFound(err) {
			return last, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == plug.ReadyCondition {
				last = c
				if ok(c) {
					return c, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("pod %s: %s did not come within 20s (last: %s %s: %s)", pod, plug.ReadyCondition, last.Status, last.Reason, last.Message)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitRunning waits until the pod runs: its sandbox is complete, with the
// pod's own interface on its node's switch. A hypervisor starts a VM, or
// migrates one, only into a launcher pod that runs; and on the lab's
// userspace datapath a port added to a node's switch stops that node's
// traffic for a few milliseconds, so a sandbox finished under a running VM
// would count against the migration what belongs to the pod's start.
func (m *migration) waitRunning(ctx context.Context, pod string) error {
	var p corev1.Pod
	return poll.Until(ctx, 5*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
		err := m.c.Get(ctx, types.NamespacedName{Namespace: PodNamespace, Name: pod}, &p)
		return err == nil && p.Status.Phase == corev1.PodRunning, client.IgnoreNotFound(err)
	}, func() error {
		return fmt.Errorf("pod %s: not running within 60s (phase %q)", pod, p.Status.Phase)
	})
}

// raiseDatapath gives every node's ovs-vswitchd (its session and threads)
// niceness nice for the run, and returns what puts the lab's own back.
func (m *migration) raiseDatapath(nice int) (restore func(), err error) {
	var raised []int
	restore = func() {
		for _, pid := range raised {
			_ = setSessionNice(pid, 0)
		}
	}
	for _, n := range m.s.Topology.Nodes {
		pid, err := readPidfile(filepath.Join(m.s.nodeDir(n.Name), "ovs-vswitchd.pid"))
		if err == nil {
			err = setSessionNice(pid, nice)
		}
		if err != nil {
			restore()
			return nil, fmt.Errorf("--datapath-nice %d: node %s: ovs-vswitchd: %w", nice, n.Name, err)
		}
		raised = append(raised, pid)
	}
	return restore, nil
}

// ended records a deleted pod whose sandbox the kubelet tears down a second
// or two later.
func (m *migration) ended(n NodeSpec, pod string) {
	if m.ending == nil {
		m.ending = map[string][]string{}
	}
	m.ending[n.Name] = append(m.ending[n.Name], pod)
}

// settle waits until the sandboxes of the pods deleted on a node are torn
// down, before the VM moves onto it: on the lab's userspace datapath a port
// removed from a node's switch, like one added, stops that node's traffic
// for a few milliseconds, which would count against the migration.
func (m *migration) settle(ctx context.Context, n NodeSpec) error {
	if len(m.ending[n.Name]) == 0 {
		return nil
	}
	for _, pod := range m.ending[n.Name] {
		lport := PodNamespace + "_" + pod
		if err := m.waitSandboxesGone(ctx, n, "pod "+pod, func(id string) bool { return id == lport }); err != nil {
			return err
		}
	}
	delete(m.ending, n.Name)
	// Every ovn-controller has then installed what the pods' ends changed.
	_, err := m.s.nbctl(ctx, m.sh, "--wait=hv", "sync")
	return err
}

// waitSandboxesGone waits until the sandboxes of deleted pods are torn down:
// no interface of the node is bound to a logical port of theirs (lport says
// which are) any more.
func (m *migration) waitSandboxesGone(ctx context.Context, n NodeSpec, what string, lport func(id string) bool) error {
	return ovs.WithSwitch(ctx, m.s.OVSDB(n.Name), func(db *ovs.Switch) error {
		var iface string
		return poll.Until(ctx, 10*time.Millisecond, 60*time.Second, func(ctx context.Context) (bool, error) {
			ids, err := db.IfaceIDs(ctx)
			iface = ""
			for id, name := range ids {
				if lport(id) {
					iface = name
				}
			}
			return err == nil && iface == "", err
		}, func() error {
			return fmt.Errorf("node %s: %s deleted, interface %s still on the switch after 60s", n.Name, what, iface)
		})
	})
}

// waitChassis waits until the operator has bound the logical port to chassis.
func (m *migration) waitChassis(ctx context.Context, id, chassis string, rarp bool) error {
	var opts map[string]string
	var hasRARP bool
	return poll.Until(ctx, 5*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		opts, _, err = m.nb.PortOptions(ctx, id)
		_, hasRARP = opts[plug.OptionActivationStrategy]
		return err == nil && opts[plug.OptionRequestedChassis] == chassis && hasRARP == rarp, err
	}, func() error {
		return fmt.Errorf("port %s: requested-chassis %q (activation-strategy %v), want %q: is the operator running with --ovn-nb?",
			id, opts[plug.OptionRequestedChassis], hasRARP, chassis)
	})
}

// waitBoundAlone waits until the southbound database has the port bound on
// chassis alone: its main chassis, no additional one, up.
func (m *migration) waitBoundAlone(ctx context.Context, id, chassis string) error {
	var b ovs.PortBinding
	return poll.Until(ctx, time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		b, err = m.sb.PortBinding(ctx, id)
		return err == nil && b.Main == chassis && len(b.Additional) == 0 && b.Up, err
	}, func() error {
		return fmt.Errorf("port %s: bound on %q (additional %v, up %v), want %s alone, 20s after the source pod's deletion", id, b.Main, b.Additional, b.Up, chassis)
	})
}

// waitUnplugged waits until nothing of the port is left plugged on the node.
func (m *migration) waitUnplugged(ctx context.Context, n NodeSpec, id string) error {
	return ovs.WithSwitch(ctx, m.s.OVSDB(n.Name), func(db *ovs.Switch) error {
		return poll.Until(ctx, 5*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
			plugged, err := db.Plugged(ctx)
			return err == nil && !slices.ContainsFunc(plugged, func(pl plug.Plugged) bool { return pl.PortID == id }), err
		}, func() error { return fmt.Errorf("node %s: port %s still plugged 20s after its pod went", n.Name, id) })
	})
}

func (m *migration) setMode(ctx context.Context, mode plug.Mode) error {
	for _, n := range []NodeSpec{m.src, m.dst} {
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, plug.ModeAnnotation, mode))
		if err := m.c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("node %s: plug mode %s: %w", n.Name, mode, err)
		}
	}
	return nil
}
