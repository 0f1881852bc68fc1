package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/config"
	"netshift.io/netshift/internal/atomicfile"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/kubenode"
	"netshift.io/netshift/internal/lab/labcni"
	"netshift.io/netshift/internal/lab/ovnk"
	"netshift.io/netshift/internal/lab/standin"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/zones"
)

// The machine joins the lab's underlay at
// hostIP, where the API server serves; Services get addresses from
// serviceCIDR, and each node's kube-proxy carries them.
const (
	hostIP      = "198.19.0.254"
	serviceCIDR = "198.19.128.0/24"
	hostLink    = "h0"
)

// hostLinkName is the machine's end of its link into the underlay.
// NamePrefix begins the name of every network namespace and root link a lab
// makes ("ns-<lab>-..."): what is a lab's on a machine is found by it.
const NamePrefix = "ns-"

func (s *State) hostLinkName() string { return NamePrefix + s.Options.Name + "-h" }

// joinUnderlay links the machine to the lab's underlay, so that the kubelets
// reach the API server and the API server reaches the kubelets. Its veth goes
// with the underlay namespace.
func (s *State) joinUnderlay(ctx context.Context, sh *shell) error {
	if out, _ := exec.CommandContext(ctx, "ip", "-o", "addr", "show", "to", hostIP).Output(); len(out) > 0 {
		return fmt.Errorf("another lab of real nodes holds %s on this machine (%s): one at a time", hostIP, strings.Fields(string(out))[1])
	}
	ul := s.Topology.UnderlayNetns
	for _, args := range [][]string{
		{"link", "add", s.hostLinkName(), "mtu", fmt.Sprint(s.Options.UnderlayMTU), "type", "veth", "peer", "name", hostLink, "netns", ul},
		{"-n", ul, "link", "set", hostLink, "master", "ulbr", "up"},
		{"addr", "add", hostIP + "/24", "dev", s.hostLinkName()},
		{"link", "set", s.hostLinkName(), "up"},
	} {
		if err := sh.ip(ctx, args...); err != nil {
			return fmt.Errorf("the machine's link into the underlay: %w", err)
		}
	}
	// The nodes' underlay ends are ports of OVS's userspace datapath, which passes on the
	// partial checksums of a veth's offload unfilled: TCP would die past its handshake.
	if _, err := sh.run(ctx, nil, "ethtool", "-K", s.hostLinkName(), "tx", "off"); err != nil {
		return err
	}
	if _, err := sh.inNetns(ctx, ul, nil, "ethtool", "-K", hostLink, "tx", "off"); err != nil {
		return err
	}
	// The machine is the nodes' way out, as a node's gateway is: a Service address is routed
	// there before kube-proxy rewrites it to its endpoint.
	for _, n := range s.Topology.Nodes {
		if err := sh.ip(ctx, "-n", n.Netns, "route", "add", "default", "via", hostIP); err != nil {
			return fmt.Errorf("node %s: default route: %w", n.Name, err)
		}
	}
	return nil
}

// hookLabel prefixes the node labels a lab build's agent reads its test hooks
// from (cmd/netshift's LabHookLabel).
const hookLabel = "lab.netshift.io/"

// hookLabels are a real node's agent's test hooks, given as --agent-arg and
// set as node labels: that agent is a DaemonSet pod installed from config/lab,
// with no flags of its own.
func hookLabels(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		flag, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch flag {
		case "clock-offset", "fail-step-once":
			if flag == "fail-step-once" && out[hookLabel+flag] != "" {
				value = out[hookLabel+flag] + "_" + value
			}
			if value == "" || strings.HasPrefix(value, "-") {
				return nil, fmt.Errorf("--agent-arg: %q: on real nodes the value must be a non-empty label value (no negative offsets)", a)
			}
			out[hookLabel+flag] = strings.ReplaceAll(value, ",", "_")
		default:
			return nil, fmt.Errorf("--agent-arg: %q: on real nodes an agent takes only --clock-offset and --fail-step-once (set as its node's labels)", a)
		}
	}
	return out, nil
}

func hookLabelsErr(byNode map[string][]string) error {
	for _, args := range byNode {
		if _, err := hookLabels(args); err != nil {
			return err
		}
	}
	return nil
}

// kubeNode is a lab node's Kubernetes side. Its OVS (the lab's files of the
// node) is bound at the standard /run/openvswitch inside it.
func (s *State) kubeNode(n NodeSpec, assets string) kubenode.Node {
	labels := map[string]string{"netshift.io/lab": s.Options.Name}
	for k, v := range s.Options.NodeLabels[n.Name] {
		labels[k] = v
	}
	if zone := s.pluginZoneLabel(n.Name); zone != "" {
		labels[zones.ZoneLabel] = zone // the zone its network plugin pod joins: the layout the lab built
	}
	hooks, _ := hookLabels(s.Options.AgentArgs[n.Name]) // validated with the options
	for k, v := range hooks {
		labels[k] = v
	}
	layout, _ := kubenode.ParseLayout(s.Options.Layout) // validated with the options
	kn := kubenode.Node{Name: n.Name, Netns: n.Netns, IP: n.UnderlayIP, Dir: s.Path("nodes", n.Name, "kube"),
		Layout: layout, CNIConf: s.Options.CNIConf,
		CgroupRoot: "/netshift-lab-" + s.Options.Name + "-" + n.Name,
		Binds:      map[string]string{s.nodeDir(n.Name): "/run/openvswitch", s.labDir(n.Name): "/run/netshift-lab"},
		Kubelet:    filepath.Join(assets, "kubelet"), Labels: labels,
		Kubeconfig: s.Path("identities", "system-node-"+n.Name+".kubeconfig")}
	if s.runsOVNKubernetes() {
		maps.Copy(kn.Binds, s.ovnkBinds(n.Name))
		// ovnkube-node opens a new pod's network namespace, which containerd mounts below
		// /run/containerd after the plugin's pod started.
		kn.Shared, kn.CNIFile = []string{"/run/containerd"}, ovnk.ChainedConfigFile
	}
	return kn
}

// labDir is a real node's lab directory, /run/netshift-lab inside it: its boot
// ID, and the reboot request its agent's node-restore command writes.
func (s *State) labDir(node string) string { return s.Path("nodes", node, "lab") }

// RebootFailsFile, in a node's lab directory, makes its reboot requests fail
// (lab up --fail-reboot): lab-reboot reads it.
const RebootFailsFile = "reboot-fails"

// writeLabDir prepares a real node's lab directory: its boot ID, and whether
// its reboots are made to fail.
func (s *State) writeLabDir(node string) error {
	calls := filepath.Join(s.labDir(node), standin.CallsDir)
	if err := os.MkdirAll(calls, 0o755); err != nil {
		return err
	}
	// The operator calls as a user of its own (its pod runs as non-root).
	if err := os.Chmod(calls, 0o1777); err != nil {
		return err
	}
	for _, n := range s.Options.FailReboots {
		if n == node {
			msg := "the lab makes this node's reboots fail (lab up --fail-reboot " + node + ")\n"
			return os.WriteFile(filepath.Join(s.labDir(node), RebootFailsFile), []byte(msg), 0o644)
		}
	}
	return nil
}

// rebootRequest, in a node's lab directory, asks the lab to reboot the node.
const rebootRequest = "reboot"

// RequestReboot asks the lab to reboot the node whose lab directory is dir
// (its agent's restore action, through the node's /run/netshift-lab, or a
// person through `lab rebuild-node`).
func RequestReboot(dir string) error {
	return os.WriteFile(filepath.Join(dir, rebootRequest), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
}

// rebootAndWait asks the supervisor to reboot a real node, as its agent does,
// and waits until the node runs again on its new boot.
func (s *State) rebootAndWait(ctx context.Context, node string) error {
	if _, ok := s.Topology.Node(node); !ok {
		return fmt.Errorf("no node %q in lab %s", node, s.Options.Name)
	}
	before, _ := os.ReadFile(s.BootIDPath(node))
	if err := RequestReboot(s.labDir(node)); err != nil {
		return fmt.Errorf("node %s: ask the lab to reboot it: %w", node, err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := s.reload(); err != nil {
			return err
		}
		now, _ := os.ReadFile(s.BootIDPath(node))
		if string(now) != string(before) && s.nodeRunning(node).Kubelet != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: not back from its reboot after 3 minutes; see %s", node, s.Path("supervisor.log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchNodes reboots a real node when its agent asks (its node-restore
// action), one reboot at a time per node, and answers its pods' lab calls.
func (s *State) watchNodes(ctx context.Context, binary string, reboot func(node string) error) {
	busy := map[string]bool{}
	var mu sync.Mutex
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		for _, n := range s.Topology.Nodes {
			req := filepath.Join(s.labDir(n.Name), rebootRequest)
			if _, err := os.Stat(req); err != nil {
				continue
			}
			mu.Lock()
			if busy[n.Name] {
				mu.Unlock()
				continue
			}
			busy[n.Name] = true
			mu.Unlock()
			_ = os.Remove(req)
			go func() {
				defer func() { mu.Lock(); delete(busy, n.Name); mu.Unlock() }()
				start := time.Now()
				if err := reboot(n.Name); err != nil {
					fmt.Fprintf(os.Stderr, "lab: reboot of node %s: %v\n", n.Name, err)
					return
				}
				fmt.Fprintf(os.Stderr, "lab: node %s rebooted in %.1f s\n", n.Name, time.Since(start).Seconds())
			}()
		}
	}
}

// rebootRealNode is the lab's reboot of a real node, what a power cycle is
// to a machine: its kubelet, kube-proxy, every pod, containerd and its mount
// namespace stop; its OVS, which persists its database as a node's would,
// keeps its bridges and comes back to its network configuration (the
// internal port's MTU, the tunnels' port); the node gets a new boot ID; its
// daemons start again, and the kubelet recreates its pods through the CNI
// chain. Nothing of the machine (its boot ID, its uptime) changes.
func (s *State) rebootRealNode(ctx context.Context, cp *controlplane.ControlPlane, node, binary string, archives []string, proxyKubeconfig string) error {
	n, ok := s.Topology.Node(node)
	if !ok {
		return fmt.Errorf("no node %q in lab %s", node, s.Options.Name)
	}
	if err := s.reload(); err != nil {
		return err
	}
	kn := s.kubeNode(n, cp.AssetsDir)
	if err := kn.Stop(s.nodeRunning(node)); err != nil {
		return err
	}
	// What a machine keeps in memory goes with the power: the runtime's state (its /run).
	if err := os.RemoveAll(kn.Path("/run/containerd")); err != nil {
		return err
	}
	roles := map[string]bool{"holder:" + node: true, "containerd:" + node: true, "kubelet:" + node: true, "kube-proxy:" + node: true}
	if err := s.record(func() {
		kept := s.Processes[:0]
		for _, p := range s.Processes {
			if !roles[p.Role] {
				kept = append(kept, p)
			}
		}
		s.Processes = kept
	}); err != nil {
		return err
	}
	cfg, err := nodeconfig.Read(s.NetworkConfigPath(node))
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if err := ovs.WithSwitch(ctx, s.OVSDB(node), func(sw *ovs.Switch) error {
		if err := sw.SetMTURequest(ctx, int(cfg.MTU), "br-int"); err != nil {
			return err
		}
		_, err := sw.SetTunnelPort(ctx, string(cfg.Encapsulation), int(cfg.TunnelPort))
		return err
	}); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if err := s.renewBootID(node); err != nil {
		return err
	}
	return s.startKubeNode(ctx, cp, n, binary, archives, proxyKubeconfig)
}

// labCNIConfig is a node's CNI configuration: the lab's stand-in network
// plugin, addresses from the node's part of the flat pod network. The agent
// chains netshift-cni after it once it runs on the node.
func (s *State) labCNIConfig(n NodeSpec) []byte {
	plugin := map[string]any{"type": labcni.Name, "bridge": "br-int", "ovsdb": "unix:/run/openvswitch/db.sock", "mtu": s.Options.MTU}
	subnet := podNet.String()
	if s.Options.OVN {
		// Routed: the node's own /24 behind its switch's router port, the switch the node's
		// zone's northbound database holds (the lab keeps its address in the node's lab file).
		subnet = fmt.Sprintf("198.18.%d.0/24", n.Index)
		plugin["ovn"] = map[string]string{"nbFile": "/run/netshift-lab/" + ovnNBFile, "switch": "ls-" + n.Name,
			"gateway": fmt.Sprintf("198.18.%d.1", n.Index)}
	}
	plugin["ipam"] = map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{
		"subnet": subnet, "rangeStart": fmt.Sprintf("198.18.%d.10", n.Index), "rangeEnd": fmt.Sprintf("198.18.%d.250", n.Index)}}}}
	conf := map[string]any{"cniVersion": "1.0.0", "name": "lab", "plugins": []any{plugin}}
	data, _ := json.MarshalIndent(conf, "", "  ")
	return data
}

// ovnNBFile, in a real node's lab directory, holds the address of the
// northbound database of the node's zone, where the stand-in network plugin
// creates its pods' logical ports.
const ovnNBFile = "ovn-nb"

// setNodeNB records the northbound database a real node's new pods' logical
// ports go into.
func (s *State) setNodeNB(node, nb string) error {
	if err := os.MkdirAll(s.labDir(node), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.labDir(node), ovnNBFile), []byte(nb+"\n"), 0o644)
}

// buildImages writes the lab's images from the binaries beside the lab's own
// (hack/build.sh lays them out): netshift itself (a lab build), netshift-cni
// and the pause program; the workload is Debian's static busybox.
func (s *State) buildImages(binary string) ([]string, error) {
	dir := filepath.Dir(binary)
	b := images.Binaries{Netshift: binary, CNI: filepath.Join(dir, "netshift-cni"), Pause: filepath.Join(dir, "netshift-pause"), Busybox: "/bin/busybox"}
	imgs, err := images.Lab(b)
	if err != nil {
		return nil, fmt.Errorf("%w (hack/build.sh builds netshift-lab, netshift-cni and netshift-pause side by side)", err)
	}
	if err := os.MkdirAll(s.Path("images"), 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, img := range imgs {
		name := strings.NewReplacer("/", "_", ":", "_").Replace(img.Ref) + ".tar"
		path := s.Path("images", name)
		if _, err := img.WriteArchiveFile(path); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	if s.runsOVNKubernetes() {
		path, err := s.ovnkImage()
		if err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}

// recordKube records a node process the moment it starts.
func (s *State) recordKube(p kubenode.Proc) error {
	proc, err := Identify(p.Role, p.Pid)
	if err != nil {
		return fmt.Errorf("%s (pid %d) exited at once: %w", p.Role, p.Pid, err)
	}
	return s.record(func() { s.Processes = append(s.Processes, proc) })
}

// startKubeNode brings a node's Kubernetes side up: its mount namespace, the
// stand-in network plugin, its network configuration, containerd with the
// lab's images, the kubelet and kube-proxy.
func (s *State) startKubeNode(ctx context.Context, cp *controlplane.ControlPlane, n NodeSpec, binary string, archives []string, proxyKubeconfig string) error {
	kn := s.kubeNode(n, cp.AssetsDir)
	if _, err := cp.UserKubeconfig(s.Path("identities"), "system:node:"+n.Name, "system:nodes"); err != nil {
		return err
	}
	holder, err := kn.StartHolder(ctx, s.recordKube)
	if err != nil {
		return err
	}
	if s.Options.Neutron {
		// Where a kubelet's kubeconfig lives on a node: netshift-cni's identity is made from it.
		if err := writeFlatKubeconfig(kn.Kubeconfig, kn.Path("/var/lib/kubelet/kubeconfig")); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	conf := s.labCNIConfig(n)
	if s.runsOVNKubernetes() {
		conf = ovnk.ChainedConfig(labcni.Name) // ovnkube-node puts its plugin's binary in place
	}
	if err := kn.InstallCNI(conf, map[string]string{labcni.Name: binary,
		"host-local": filepath.Join(kubenode.SystemCNIPlugins, "host-local"), "loopback": filepath.Join(kubenode.SystemCNIPlugins, "loopback")}); err != nil {
		return err
	}
	if _, err := kn.StartContainerd(ctx, holder, images.PauseRef, s.recordKube); err != nil {
		return err
	}
	if err := kn.ImportImages(ctx, archives...); err != nil {
		return err
	}
	if _, err := kn.StartKubelet(ctx, holder, s.recordKube); err != nil {
		return err
	}
	_, err = kn.StartKubeProxy(ctx, holder, filepath.Join(cp.AssetsDir, "kube-proxy"), proxyKubeconfig, podNet.String(), s.recordKube)
	return err
}

// running finds a node's recorded processes still alive.
func (s *State) nodeRunning(node string) kubenode.Running {
	var r kubenode.Running
	for _, p := range s.Processes {
		if !p.Alive() {
			continue
		}
		switch p.Role {
		case "holder:" + node:
			r.Holder = p.Pid
		case "containerd:" + node:
			r.Containerd = p.Pid
		case "kubelet:" + node:
			r.Kubelet = p.Pid
		case "kube-proxy:" + node:
			r.KubeProxy = p.Pid
		}
	}
	return r
}

// stopKubeNodes stops every real node (their pods' processes included), for
// the teardown.
func (s *State) stopKubeNodes() error {
	// The nodes are independent machines: they power off side by side.
	return s.eachNode(func(n NodeSpec) error { return s.kubeNode(n, "").Stop(s.nodeRunning(n.Name)) })
}

// eachNode runs fn for every node at once and joins their errors.
func (s *State) eachNode(fn func(NodeSpec) error) error {
	errs := make([]error, len(s.Topology.Nodes))
	var wg sync.WaitGroup
	for i, n := range s.Topology.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// installNetshift installs netshift as a user does, `kubectl apply -k` of the
// lab's overlay of config/default, written out from the manifests this binary
// carries.
func (s *State) installNetshift(ctx context.Context, cp *controlplane.ControlPlane, kubeconfig string) error {
	dir := s.Path("config")
	err := fs.WalkDir(config.Kustomize, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := config.Kustomize.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("write the manifests: %w", err)
	}
	overlay := "lab"
	switch {
	case s.Options.Neutron:
		overlay = "lab-neutron"
	case s.Options.OVN && s.Options.Zones == ZonesLegacy:
		overlay = "lab-ovn" // no zone controller until `lab upgrade-zones`
	case s.Options.OVN:
		overlay = "lab-ovn-zones"
	case s.runsOVNKubernetes() && s.Options.Zones == ZonesLegacy:
		overlay = "lab-ovn-kubernetes" // no zone controller until `lab upgrade-zones`
	case s.runsOVNKubernetes():
		overlay = "lab-ovn-kubernetes-zones"
	}
	if s.Options.Layout != "" && s.Options.Layout != kubenode.ContainerdLayout.Name {
		// As a user on that distribution does: an overlay of their own adding the runtime's component.
		var err error
		if overlay, err = s.writeRuntimeOverlay(overlay); err != nil {
			return err
		}
	}
	if s.Options.WithoutNetshift {
		return nil // written out (config/lab, or config/lab-LAYOUT) for whoever installs it, as from a checkout
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return s.applyOverlay(ctx, cp.AssetsDir, kubeconfig, overlay)
}

// writeRuntimeOverlay writes an overlay of base with the component of the
// lab's node layout, and returns its name.
func (s *State) writeRuntimeOverlay(base string) (string, error) {
	name := base + "-" + s.Options.Layout
	k := fmt.Sprintf("resources:\n- ../%s\ncomponents:\n- ../components/runtime-%s\n", base, s.Options.Layout)
	dir := s.Path("config", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644)
}

// applyOverlay is `kubectl apply -k` of one of the lab's overlays, as written
// out at install.
func (s *State) applyOverlay(ctx context.Context, assets, kubeconfig, overlay string) error {
	dir := s.Path("config", overlay)
	out, err := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), "--kubeconfig", kubeconfig, "apply", "-k", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl apply -k %s: %w: %s", dir, err, out)
	}
	f, err := os.OpenFile(s.Path("install.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "kubectl apply -k %s\n%s", dir, out)
	return err
}

// workloads are the probe's pods: one DaemonSet per rank, so every node runs
// PodsPerNode of them.
func (s *State) createWorkloads(ctx context.Context, c client.Client) error {
	for j := 1; j <= s.Options.PodsPerNode; j++ {
		labels := map[string]string{"app": "probe", "netshift.io/rank": fmt.Sprint(j)}
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", j), Namespace: PodNamespace},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "workload", Image: images.WorkloadRef, ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"/bin/sleep", "2147483647"}}}}}}}
		if err := c.Create(ctx, ds); err != nil {
			return fmt.Errorf("DaemonSet %s: %w", ds.Name, err)
		}
	}
	return nil
}

// waitInstalled waits until every node is Ready, every agent and the
// operator run, and every workload pod runs.
func (s *State) waitInstalled(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		last = s.notInstalled(ctx, c)
		if last == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// notInstalled says what is not ready yet ("" when everything is).
func (s *State) notInstalled(ctx context.Context, c client.Client) string {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return err.Error()
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if ready < len(s.Topology.Nodes) {
		return fmt.Sprintf("%d of %d nodes Ready", ready, len(s.Topology.Nodes))
	}
	var sets appsv1.DaemonSetList
	if err := c.List(ctx, &sets); err != nil {
		return err.Error()
	}
	want := map[string]bool{}
	if s.runsPlugin() {
		want[standin.Namespace+"/"+standin.NodeApp] = true // every node in its zone, annotated
	}
	for j := 1; j <= s.Options.PodsPerNode; j++ {
		want[fmt.Sprintf("%s/probe-%d", PodNamespace, j)] = true
	}
	if !s.Options.WithoutNetshift {
		want["netshift-system/netshift-agent"] = true
	}
	for _, ds := range sets.Items {
		key := ds.Namespace + "/" + ds.Name
		if want[key] {
			if int(ds.Status.NumberReady) < len(s.Topology.Nodes) {
				return fmt.Sprintf("DaemonSet %s: %d of %d pods ready", key, ds.Status.NumberReady, len(s.Topology.Nodes))
			}
			delete(want, key)
		}
	}
	for key := range want {
		return "DaemonSet " + key + " not created"
	}
	if s.Options.WithoutNetshift {
		return ""
	}
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "netshift-system", Name: "netshift-operator"}, &dep); err != nil {
		return "the operator's Deployment: " + err.Error()
	}
	if dep.Status.ReadyReplicas < 1 {
		return "no operator replica ready"
	}
	return ""
}

// RuntimeNetns is a pod's network namespace as its node's runtime holds it,
// through its sandbox's process ("" when no node's runtime has it).
func (s *State) RuntimeNetns(ctx context.Context, namespace, name string) string {
	return s.runtimeNetns(ctx)[namespace+"/"+name]
}

// runtimeNetns maps every sandbox of every node to its network namespace.
func (s *State) runtimeNetns(ctx context.Context) map[string]string {
	netns := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range s.Topology.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc, err := cri.Dial(s.kubeNode(n, "").Socket())
			if err != nil {
				return
			}
			defer rc.Close()
			list, err := rc.Sandboxes(ctx)
			if err != nil {
				return
			}
			for _, sb := range list {
				if path, err := sb.NetnsPath("/proc"); err == nil {
					mu.Lock()
					netns[sb.Namespace+"/"+sb.Name] = path
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return netns
}

// realPods lists the lab's workload pods with the network namespace their
// node's runtime holds them in (through the sandbox's process).
func (s *State) realPods(ctx context.Context, c client.Client) ([]PodSpec, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(PodNamespace)); err != nil {
		return nil, err
	}
	netns := s.runtimeNetns(ctx)
	var out []PodSpec
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		out = append(out, PodSpec{Name: p.Name, Node: p.Spec.NodeName, Netns: netns[p.Namespace+"/"+p.Name], IP: p.Status.PodIP})
	}
	return out, nil
}

// serveRealNodes is the supervisor of a lab of real nodes: the control plane
// (API server, etcd, controller manager, scheduler), every node's Kubernetes
// side, netshift installed from config/lab, the probe's workload pods.
func (s *State) serveRealNodes(ctx context.Context, binary string) error {
	began := time.Now()
	stage := func(what string) { fmt.Printf("[%5.1fs] %s\n", time.Since(began).Seconds(), what) }
	// The nodes' images are built while the control plane starts: neither needs the other.
	type built struct {
		archives []string
		err      error
	}
	builtImages := make(chan built, 1)
	go func() {
		archives, err := s.buildImages(binary)
		builtImages <- built{archives, err}
	}()
	cp, kubeconfig, err := s.startControlPlane(controlplane.Options{Address: hostIP, Cluster: true, ServiceCIDR: serviceCIDR, Dir: s.Path("cp"),
		WithoutNetshift: s.Options.WithoutNetshift})
	if err != nil {
		return err
	}
	defer cp.Stop()
	stage("control plane up")
	c := cp.Client
	if err := s.createObjects(ctx, c); err != nil {
		return err
	}
	if s.runsPlugin() {
		if err := standin.Create(ctx, c, s.Options.Zones == ZonesMulti); err != nil {
			return err
		}
	}
	// The network plugin's pods call the lab from their first start, before the install is done.
	go s.serveCalls(ctx, binary)
	img := <-builtImages
	if img.err != nil {
		return img.err
	}
	archives := img.archives
	stage("objects created, images built")
	if err := os.MkdirAll(s.Path("identities"), 0o700); err != nil {
		return err
	}
	proxy, err := cp.UserKubeconfig(s.Path("identities"), "system:kube-proxy")
	if err != nil {
		return err
	}
	if err := s.eachNode(func(n NodeSpec) error { return s.startKubeNode(ctx, cp, n, binary, archives, proxy) }); err != nil {
		return err
	}
	stage("every node's containerd, kubelet and kube-proxy started")
	if s.runsOVNKubernetes() {
		if err := s.startOVNKubernetes(ctx, cp, kubeconfig); err != nil {
			return err
		}
		stage("OVN-Kubernetes ready on every node")
	}
	if err := s.installNetshift(ctx, cp, kubeconfig); err != nil {
		return err
	}
	stage("netshift installed")
	if err := s.createWorkloads(ctx, c); err != nil {
		return err
	}
	if err := s.waitInstalled(ctx, c, 5*time.Minute); err != nil {
		return fmt.Errorf("lab %s: %w", s.Options.Name, err)
	}
	stage("netshift and the lab's pods ready")
	if err := s.record(func() { s.Kubeconfig, s.Ready = kubeconfig, true }); err != nil {
		return err
	}
	if !s.Options.WithoutNetshift {
		s.grantAgentsRealtime(ctx)
	}
	s.watchNodes(ctx, binary, func(node string) error { return s.rebootRealNode(ctx, cp, node, binary, archives, proxy) })
	// The nodes go before the control plane: the API server's graceful stop otherwise waits on
	// every kubelet's and agent's open watches.
	if err := s.reload(); err != nil {
		return err
	}
	return s.stopKubeNodes()
}

// agentsRealtime is the real-time budget, per second, the lab grants each
// node's agent (see kubenode.GrantRealtime): its steps' threads ask for real
// time for the few milliseconds of a step. The nodes' budgets together stay
// well under the machine's (950 ms a second).
func agentsRealtime(nodes int) time.Duration {
	return min(50*time.Millisecond, 800*time.Millisecond/time.Duration(max(nodes, 1)))
}

// grantAgentsRealtime grants each node's agent, as it runs now, its
// real-time budget. An agent that restarts later runs its steps at the best
// priority it gets without one, and says so in its step logs.
func (s *State) grantAgentsRealtime(ctx context.Context) {
	budget := agentsRealtime(len(s.Topology.Nodes))
	for _, n := range s.Topology.Nodes {
		pid, err := s.NetshiftPid(ctx, "agent:"+n.Name)
		if err == nil && pid == 0 {
			err = errors.New("no agent runs")
		}
		if err == nil {
			err = s.kubeNode(n, "").GrantRealtime(pid, budget)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "lab: node %s: the agent's steps run without real time: %v\n", n.Name, err)
		}
	}
}
