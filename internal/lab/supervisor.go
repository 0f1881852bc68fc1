package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/kubesim"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/zones"
)

// Serve is the lab's supervisor, a process of its own that `lab up` starts:
// it runs the real API server and etcd, creates a Node per node and a Pod per
// pod, runs the operator and one agent per node as processes with their own
// identities, plays the kubelet until it is told to stop, and then stops all
// of it.
func Serve(ctx context.Context, name, binary string) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	self, err := Identify("supervisor", os.Getpid())
	if err != nil {
		return err
	}
	if err := s.record(func() { s.Processes = append(s.Processes, self) }); err != nil {
		return err
	}
	if s.Options.RealNodes {
		return s.serveRealNodes(ctx, binary)
	}
	cp, kubeconfig, err := s.startControlPlane(controlplane.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	c := cp.Client
	if err := s.createObjects(ctx, c); err != nil {
		return err
	}
	kids, err := s.startNetshift(ctx, cp, binary)
	defer kids.stop()
	if err != nil {
		return err
	}
	sim := &kubesim.Sim{Client: c, Namespaces: []string{PodNamespace},
		PodIP: func(p *corev1.Pod) string {
			spec, _ := s.Topology.Pod(p.Name)
			return spec.IP
		},
		Remove: s.removePod,
	}
	if err := s.record(func() { s.Kubeconfig, s.Ready = kubeconfig, true }); err != nil {
		return err
	}
	sim.Run(ctx)
	return nil
}

// startControlPlane starts the lab's control plane as this process's
// children, records them (so `lab down` stops them even if this process
// dies) and writes the admin kubeconfig into the lab's directory.
func (s *State) startControlPlane(o controlplane.Options) (*controlplane.ControlPlane, string, error) {
	cp, err := controlplane.StartWith(o)
	if err != nil {
		return nil, "", err
	}
	for _, c := range childrenOf(os.Getpid()) {
		switch c.Comm {
		case "kube-apiserver", "etcd", "kube-controller", "kube-scheduler": // comm: 15 bytes at most
			if err := s.record(func() { s.Processes = append(s.Processes, c) }); err != nil {
				cp.Stop()
				return nil, "", err
			}
		}
	}
	kubeconfig := s.Path("admin.kubeconfig")
	data, err := os.ReadFile(cp.Kubeconfig)
	if err == nil {
		err = os.WriteFile(kubeconfig, data, 0o600)
	}
	if err != nil {
		cp.Stop()
		return nil, "", err
	}
	return cp, kubeconfig, nil
}

func (s *State) createObjects(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PodNamespace}}); err != nil {
		return err
	}
	// Real nodes register themselves (their kubelets), with the lab's labels.
	for _, n := range s.Topology.Nodes {
		if s.Options.RealNodes {
			break
		}
		labels := map[string]string{"kubernetes.io/hostname": n.Name, "netshift.io/lab": s.Options.Name}
		for k, v := range s.Options.NodeLabels[n.Name] {
			labels[k] = v
		}
		annotations := map[string]string{}
		switch s.Options.Zones {
		case ZonesSingle:
			annotations[zones.ZoneAnnotation] = zones.GlobalZone
		case ZonesMulti:
			annotations[zones.ZoneAnnotation] = n.Name
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: annotations},
			Spec: corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}}}
		if err := c.Create(ctx, node); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		node.Status = corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "netshift lab node", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.UnderlayIP}, {Type: corev1.NodeHostName, Address: n.Name}},
		}
		if err := c.Status().Update(ctx, node); err != nil {
			return fmt.Errorf("node %s: status: %w", n.Name, err)
		}
	}
	// The layout the lab built is the wish: a lab never starts moving zones by itself.
	if mode := map[string]zones.Mode{ZonesSingle: zones.Single, ZonesMulti: zones.Multi}[s.Options.Zones]; mode != "" {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName},
			Data: map[string]string{zones.KeyZoneMode: string(mode), zones.KeyDefinitive: "yes"}}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("ConfigMap %s: %w", zones.ConfigMapName, err)
		}
	}
	mtu, under := int32(s.Options.MTU), int32(s.Options.UnderlayMTU)
	cn := &v1alpha1.ClusterNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterNetworkName},
		Spec: v1alpha1.ClusterNetworkSpec{MTU: &mtu, Encapsulation: s.Options.Tunnel,
			Underlay: v1alpha1.UnderlaySettings{MTU: under}}}
	if err := c.Create(ctx, cn); err != nil {
		return fmt.Errorf("ClusterNetwork: %w", err)
	}
	// What the lab built is what is applied; recording it here means an edit made before the
	// operator's first look is still a change, not the starting point.
	cn.Status.Applied = &v1alpha1.AppliedNetwork{MTU: mtu, VXLANPort: cn.Spec.VXLANPort, GenevePort: cn.Spec.GenevePort}
	if err := c.Status().Update(ctx, cn); err != nil {
		return fmt.Errorf("ClusterNetwork status: %w", err)
	}
	for _, p := range s.Topology.Pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: PodNamespace, Labels: map[string]string{"app": "probe"}},
			Spec:       corev1.PodSpec{NodeName: p.Node, Containers: []corev1.Container{{Name: "probe", Image: "netshift-lab/probe"}}},
		}
		if err := c.Create(ctx, pod); err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// startNetshift starts the operator and one agent per node, each with a
// client certificate of its own.
func (s *State) startNetshift(ctx context.Context, cp *controlplane.ControlPlane, binary string) (*children, error) {
	kids := &children{}
	start := func(role, kubeconfig string, args ...string) error {
		return kids.run(ctx, s, role, binary, func() []string { return append(args, "--kubeconfig", kubeconfig) })
	}
	dir := s.Path("identities")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kc, err := cp.UserKubeconfig(dir, "netshift:operator", "netshift:operators")
	if err != nil {
		return kids, err
	}
	timeAddr, err := freeLocalAddr()
	if err != nil {
		return kids, err
	}
	opArgs := []string{"operator", "--leader-elect", "--metrics-bind-address", "127.0.0.1:0",
		"--health-probe-bind-address", "127.0.0.1:0", "--change-retry", "5s", "--answer-timeout", "10s", "--time-bind-address", timeAddr}
	if s.Options.OVN {
		opArgs = append(opArgs, "--ovn-sb", s.SBDB(), "--ovn-nb", s.NBDB(), "--southbound-resync", "3s")
	}
	// The operator's arguments are read at each (re)start: `lab upgrade-zones` turns the zone
	// controller on by recording it and stopping the operator.
	operatorArgs := func() []string {
		args := append([]string(nil), opArgs...)
		if err := s.reload(); err == nil && s.ZoneMigration {
			self := fmt.Sprintf("%q lab --name %q zone-central", binary, s.Options.Name)
			args = append(args, "--zone-migration", "--zone-central-ensure-command", self+" ensure", "--zone-central-retire-command", self+" retire")
		}
		return append(args, "--kubeconfig", kc)
	}
	if err := kids.run(ctx, s, "operator", binary, operatorArgs); err != nil {
		return kids, err
	}
	for _, n := range s.Topology.Nodes {
		kc, err := cp.UserKubeconfig(dir, "netshift:agent:"+n.Name, "netshift:agents")
		if err != nil {
			return kids, err
		}
		// The agent runs in the root namespace and reaches its node as a host-network
		// DaemonSet pod would: through the node's namespace and its OVSDB socket.
		// This lab's pods are bare namespaces with no container runtime: the agent reads them
		// from the node's pod file the lab writes (a lab build's hook), never from the API.
		args := append([]string{"agent", "--node", n.Name, "--node-netns", n.Netns, "--ovsdb", s.OVSDB(n.Name),
			"--cri-endpoint", "", "--lab-pods", s.PodsFilePath(n.Name),
			"--underlay-interface", "eth0", "--operator-time-url", "http://" + timeAddr + "/time",
			"--network-config", s.NetworkConfigPath(n.Name), "--boot-id-file", s.BootIDPath(n.Name),
			"--restore-command", fmt.Sprintf("%q lab --name %q rebuild-node %q", binary, s.Options.Name, n.Name)}, s.Options.AgentArgs[n.Name]...)
		if s.Options.OVN {
			args = append(args, "--zone-move-command", fmt.Sprintf(`%q lab --name %q zone-move "$NETSHIFT_NODE" "$NETSHIFT_ZONE"`, binary, s.Options.Name))
		}
		if err := start("agent:"+n.Name, kc, args...); err != nil {
			return kids, err
		}
	}
	return kids, nil
}

// children are the operator and agent processes. Like the kubelet restarting
// a crashed container, the supervisor starts again any that exits, and
// records the new process in place of the old.
type children struct {
	mu       sync.Mutex
	cmds     map[string]*exec.Cmd
	stopping bool
	wg       sync.WaitGroup
}

func (k *children) run(ctx context.Context, s *State, role, binary string, argsFn func() []string) error {
	args := argsFn()
	logf, err := os.OpenFile(s.Path(strings.ReplaceAll(role, ":", "-")+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	k.mu.Lock()
	if k.stopping {
		k.mu.Unlock()
		return nil
	}
	if err := cmd.Start(); err != nil {
		k.mu.Unlock()
		return fmt.Errorf("start %s: %w", role, err)
	}
	if k.cmds == nil {
		k.cmds = map[string]*exec.Cmd{}
	}
	k.cmds[role] = cmd
	k.wg.Add(1)
	k.mu.Unlock()
	p, err := Identify(role, cmd.Process.Pid)
	if err == nil {
		err = s.record(func() {
			for i := range s.Processes {
				if s.Processes[i].Role == role {
					s.Processes[i] = p
					return
				}
			}
			s.Processes = append(s.Processes, p)
		})
	}
	go func() {
		defer k.wg.Done()
		_ = cmd.Wait()
		k.mu.Lock()
		again := !k.stopping && ctx.Err() == nil
		k.mu.Unlock()
		if again {
			time.Sleep(500 * time.Millisecond)
			_ = k.run(ctx, s, role, binary, argsFn)
		}
	}()
	return err
}

func (k *children) stop() {
	if k == nil {
		return
	}
	k.mu.Lock()
	k.stopping = true
	for _, c := range k.cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	k.mu.Unlock()
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		k.mu.Lock()
		for _, c := range k.cmds {
			_ = c.Process.Kill()
		}
		k.mu.Unlock()
	}
}

// removePod is the kubelet's part when a pod is deleted: its network goes.
func (s *State) removePod(ctx context.Context, pod *corev1.Pod) error {
	p, ok := s.Topology.Pod(pod.Name)
	if !ok {
		return nil
	}
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return err
	}
	defer sh.close()
	if _, err := s.vsctl(ctx, sh, p.Node, "--if-exists", "del-port", "br-int", p.HostPort); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join("/run/netns", p.Netns)); err == nil {
		if err := sh.ip(ctx, "netns", "del", p.Netns); err != nil {
			return err
		}
	}
	return s.record(func() { s.Removed = append(s.Removed, p.Name) })
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []Process {
	entries, _ := os.ReadDir("/proc")
	var out []Process
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			if p, err := Identify("", child); err == nil {
				p.Role = p.Comm
				out = append(out, p)
			}
		}
	}
	return out
}

// freeLocalAddr picks a free loopback port for the operator's time endpoint.
func freeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
