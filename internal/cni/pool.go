package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"netshift.io/netshift/internal/atomicfile"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// PoolNamespaces is the file in which the agent lists the namespaces whose
// pods get pooled Neutron ports (those labelled netshift.io/port-pools=enabled).
// The plugin reads it, not the namespace: the node may read only its own
// pods, and a pod's own labels are its owner's to write.
type PoolNamespaces struct {
	Namespaces []string `json:"namespaces"`
}

// WritePoolNamespaces replaces the file at path, sorted.
func WritePoolNamespaces(path string, names []string) error {
	names = slices.Sorted(slices.Values(names))
	data, err := json.Marshal(PoolNamespaces{Namespaces: slices.Compact(names)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// usesPools reads the agent's list. The agent chains netshift-cni only once
// the list is written: without it (removed by hand, say) no pod is wired,
// rather than a pooled pod given the plugin's network; the runtime retries.
func usesPools(path, namespace string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%s is missing: the netshift agent writes it, is it running on the node?", path)
	}
	if err != nil {
		return false, err
	}
	var l PoolNamespaces
	if err := json.Unmarshal(data, &l); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return slices.Contains(l.Namespaces, namespace), nil
}

// sandboxState is what a pooled sandbox was wired with, kept for its DEL
// (the pod, and its record, may be gone by then).
type sandboxState struct {
	Pod    string    `json:"pod"`
	PortID string    `json:"portID"`
	Mode   plug.Mode `json:"mode"`
	Tap    string    `json:"tap"`
	// Netns is the sandbox's network namespace: once it is gone (the node
	// rebooted, or the runtime lost the sandbox), the sandbox never comes
	// back, and the runtime may never ask its DEL.
	Netns string `json:"netns"`
	// WiredMillis is how long the ADD took to wire the pod, from its port's
	// record read to its interface ready (flows installed on an OVN node);
	// TookParked says it took the port's parked device. For whoever wonders
	// where a pod's start went, and for the pod bench.
	WiredMillis float64 `json:"wiredMillis,omitempty"`
	TookParked  bool    `json:"tookParked,omitempty"`
}

func statePath(dir, containerID string) string { return filepath.Join(dir, containerID+".json") }

// podOf is the pod a sandbox is for, from the runtime's CNI_ARGS.
func podOf(args string) (podRef, bool) {
	p := podRef{Namespace: cniArg(args, "K8S_POD_NAMESPACE"), Name: cniArg(args, "K8S_POD_NAME"), UID: cniArg(args, "K8S_POD_UID")}
	return p, p.Namespace != "" && p.Name != "" && p.UID != ""
}

func cniArg(all, key string) string {
	for _, kv := range strings.Split(all, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// delegateConf is the wrapped network plugin's configuration: its own
// entry, under this list's name and version.
func (c *Config) delegateConf() (string, []byte, error) {
	d := map[string]any{}
	for k, v := range c.Pool.Delegate {
		d[k] = v
	}
	d["cniVersion"], d["name"] = c.CNIVersion, c.Name
	raw, err := json.Marshal(d)
	return d["type"].(string), raw, err
}

// poolAdd wires a pod of a pool-enabled namespace to the port its pool
// handed it, and hands every other pod to the wrapped network plugin.
func poolAdd(args *skel.CmdArgs, c *Config) error {
	pod, isPod := podOf(args.Args)
	pooled := false
	if isPod {
		var err error
		if pooled, err = usesPools(c.Pool.Namespaces, pod.Namespace); err != nil {
			return fmt.Errorf("netshift-cni: pod %s: the node's list of pool namespaces: %w", pod, err)
		}
	}
	if !pooled {
		typ, conf, err := c.delegateConf()
		if err != nil {
			return err
		}
		r, err := invoke.DelegateAdd(context.Background(), typ, conf, nil)
		if err != nil {
			return err // the network plugin's own error, as it would have reported it
		}
		return types.PrintResult(r, c.CNIVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Pool.portWait)
	defer cancel()
	res, err := wirePooled(ctx, args, c, pod)
	if err != nil {
		return fmt.Errorf("netshift-cni: node %s: %w", c.Pool.Node, err)
	}
	return types.PrintResult(res, c.CNIVersion)
}

// podsAsTheNode is the API client of the plugin's identity.
func podsAsTheNode(kubeconfig string) (corev1client.CoreV1Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "netshift-cni"
	return corev1client.NewForConfig(cfg)
}

func wirePooled(ctx context.Context, args *skel.CmdArgs, c *Config, pod podRef) (*current.Result, error) {
	kube, err := podsAsTheNode(c.Pool.Kubeconfig)
	if err != nil {
		return nil, err
	}
	a, err := waitForAssignment(ctx, kube, pod, c.Pool.Node)
	began := time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waited %s: %w", c.Pool.portWait, err)
		}
		return nil, err
	}
	iface, err := portpool.InterfaceOf(a)
	if err != nil {
		return nil, fmt.Errorf("pod %s: pool %s: %w", pod, a.Pool, err)
	}
	port := plug.Port{ID: a.ID, MAC: iface.MAC.String()}.WithDefaults(pod.UID)
	if err := port.Validate(); err != nil {
		return nil, fmt.Errorf("pod %s: pool %s: %w", pod, a.Pool, err)
	}
	mode, err := nodeMode(ctx, kube, c.Pool)
	if err != nil {
		return nil, err
	}
	bridge := c.Pool.Bridge
	if iface.VLAN != 0 {
		// A trunk's subport: the node is a VM, and its trunk NIC's bridge carries the pod's VLAN.
		if c.Pool.TrunkBridge == "" {
			return nil, fmt.Errorf("pod %s: pool %s: port %s is a trunk subport (VLAN %d), but this node has no trunk bridge (pool.trunkBridge, the agent's --cni-trunk-bridge)",
				pod, a.Pool, a.ID, iface.VLAN)
		}
		mode, bridge = plug.Subport, c.Pool.TrunkBridge
	}
	sw, err := ovs.OpenSwitch(ctx, c.Pool.OVSDB)
	if err != nil {
		return nil, fmt.Errorf("pod %s: port %s: %w", pod, a.ID, err)
	}
	defer sw.Close()
	// Recorded before anything is made: a DEL after a failure halfway undoes it all.
	st := sandboxState{Pod: pod.String(), PortID: a.ID, Mode: mode, Tap: port.Tap, Netns: args.Netns}
	if err := writeState(c.Pool.StateDir, args.ContainerID, st); err != nil {
		return nil, err
	}
	// On the way, the records of sandboxes gone with their namespaces (a reboot) go too.
	_, _ = otherSandboxHolds(c.Pool.StateDir, args.ContainerID, st)
	mtu := podMTU(iface.MTU, c.Pool.MTU, c.NetworkConfig)
	dp, err := sw.DatapathType(ctx, bridge)
	if err != nil {
		return nil, fmt.Errorf("pod %s: port %s: bridge %s: %w", pod, a.ID, bridge, err)
	}
	ovnRemote, err := sw.OpenvSwitchExternalID(ctx, "ovn-remote")
	if err != nil {
		return nil, fmt.Errorf("pod %s: port %s: %w", pod, a.ID, err)
	}
	// The userspace datapath forwards a segment whose checksum was left to
	// the hardware without filling it in: the pod must fill it in itself.
	link := podLink{Netns: args.Netns, IfName: args.IfName, HostName: port.Tap, MTU: mtu, TxChecksumOff: dp == "netdev"}
	gone := func(holder string) bool { return podGoneFromNode(ctx, kube, holder) }
	reused, err := wirePort(ctx, sw, c.Pool, link, mode, port, pod.String(), dp, iface, gone)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", pod, err)
	}
	// On an OVN node, wait for ovn-controller's flows, as ovn-kubernetes'
	// plugin does: the pod's first packet then goes through. A subport has
	// no interface of its own on the integration bridge to wait on: it is
	// bound through its parent's.
	if ovnRemote != "" && mode != plug.Subport {
		if err := flowsInstalled(ctx, sw, mode, port); err != nil {
			return nil, fmt.Errorf("pod %s: %w", pod, err)
		}
	}
	// The switch has opened the node end by now: it must still be up.
	if err := link.ensureHostUp(); err != nil {
		return nil, fmt.Errorf("pod %s: port %s: %w", pod, a.ID, err)
	}
	st.WiredMillis, st.TookParked = float64(time.Since(began).Microseconds())/1000, reused
	if err := writeState(c.Pool.StateDir, args.ContainerID, st); err != nil {
		return nil, err
	}
	return link.result(iface), nil
}

// Wiring reads how netshift-cni wired pod (namespace/name) on this node,
// from its live sandbox's record in stateDir: how long the ADD took from the
// port's record to a ready interface, and whether it took a parked device.
func Wiring(stateDir, pod string) (took time.Duration, tookParked, found bool, err error) {
	records, err := sandboxRecords(stateDir)
	for _, r := range records {
		if r.Pod == pod && r.WiredMillis > 0 {
			return time.Duration(r.WiredMillis * float64(time.Millisecond)), r.TookParked, true, nil
		}
	}
	return 0, false, false, err
}

// wirePort gives the pod its port's device: the parked one when the node
// has it (reused), else a fresh one, plugged.
func wirePort(ctx context.Context, sw *ovs.Switch, p *PoolConfig, link podLink, mode plug.Mode, port plug.Port, pod, dp string, iface portpool.Interface, holderGone func(string) bool) (reused bool, err error) {
	if reused, err = takeParked(ctx, sw, p, link, mode, port, pod, dp, iface, holderGone); err != nil || reused {
		return reused, err
	}
	return false, wireFresh(ctx, sw, p, link, mode, port, pod, dp, iface, holderGone)
}

// wireFresh makes the pod a new device and plugs it. A node end of the
// port's name already there (an earlier sandbox of the pod's, or the port's
// previous pod's) is replaced, and the pod's plug of the port with it: the
// userspace switch serves a device that replaced another under the same
// rows no more (found by TestPortHandedOnBeforeTheOldSandboxsDEL), and
// serves a new device through new rows.
func wireFresh(ctx context.Context, sw *ovs.Switch, p *PoolConfig, link podLink, mode plug.Mode, port plug.Port, pod, dp string, iface portpool.Interface, holderGone func(string) bool) error {
	if _, err := netlink.LinkByName(link.HostName); err == nil {
		plugged, err := sw.Plugged(ctx)
		if err != nil {
			return fmt.Errorf("port %s: %w", port.ID, err)
		}
		if pl, ok := plug.PlugOf(plugged, port.ID); ok && pl.Owner == pod {
			if err := sw.Unplug(ctx, pl, p.Bridge); err != nil {
				return fmt.Errorf("port %s: replace the plug of an earlier sandbox: %w", port.ID, err)
			}
		}
	}
	if err := link.create(iface); err != nil {
		return fmt.Errorf("port %s: %w", port.ID, err)
	}
	return plugPooled(ctx, sw, p, mode, port, pod, dp, iface.VLAN, holderGone)
}

// podMTU is a pooled pod's MTU: its Neutron network's, lowered to the
// node's applied pod MTU where netshift has one (a live change lowers the
// underlay's room for everyone); where neither is known, the configured one.
func podMTU(network, configured int, nodeConfig string) int {
	mtu := network
	if f, err := nodeconfig.Read(nodeConfig); err == nil && (mtu == 0 || int(f.MTU) < mtu) {
		mtu = int(f.MTU)
	}
	if mtu == 0 {
		mtu = configured
	}
	return mtu
}

// plugPooled plugs the pod's port as the agent does (package plug decides,
// package ovs writes). The agent may plug the same port at the same moment:
// the switch's unique names turn the second insert into an error, and a
// second look finds the port plugged.
//
// The operator hands a port on only once its previous pod is gone, but that
// pod's sandbox may not be torn down yet (a forced deletion does not wait
// for the kubelet): a plug of the port for a pod that holderGone says is no
// live pod of this node is stale, and taken over.
func plugPooled(ctx context.Context, sw *ovs.Switch, p *PoolConfig, mode plug.Mode, port plug.Port, owner, dp string, vlan int, holderGone func(string) bool) error {
	for attempt := 0; ; attempt++ {
		plugged, err := sw.Plugged(ctx)
		if err != nil {
			return fmt.Errorf("port %s: %w", port.ID, err)
		}
		adm, err := plug.Admit(mode, plugged, port, owner)
		if prior, held := plug.PlugOf(plugged, port.ID); errors.Is(err, plug.ErrNameTaken) && held && !prior.Parked() && prior.Owner != owner &&
			holderGone != nil && holderGone(prior.Owner) && attempt == 0 {
			// Unplugged, not adopted: its rows name a device this ADD has replaced,
			// and the switch attaches a new device cleanly only to new rows.
			if err := sw.Unplug(ctx, prior, p.Bridge); err != nil {
				return fmt.Errorf("port %s: take it over from %s, gone: %w", port.ID, prior.Owner, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if adm.Discard != nil {
			// The port's device parked the other way (the node's mode changed since).
			if err := sw.Unplug(ctx, *adm.Discard, p.Bridge); err != nil {
				return err
			}
		}
		if mode == plug.Subport {
			err = sw.PlugSubport(ctx, port, owner, vlan, p.TrunkBridge)
		} else {
			err = sw.Plug(ctx, mode, port, owner, adm.Isolate, p.Bridge, dp)
		}
		if err == nil || attempt == 1 || ctx.Err() != nil {
			return err
		}
	}
}

// flowsInstalled waits until ovn-controller has installed the port's flows
// (ovn-installed on its integration-side interface).
func flowsInstalled(ctx context.Context, sw *ovs.Switch, mode plug.Mode, port plug.Port) error {
	side := port.Tap
	if mode == plug.PerPort {
		side = plug.NamesFor(port.ID).IntegrationPatch
	}
	for {
		got, err := sw.Interfaces(ctx, side)
		if err != nil {
			return fmt.Errorf("port %s: %w", port.ID, err)
		}
		if got[side].OVNInstalled {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("port %s: ovn-controller has not installed its flows on %s (ofport %d): is the port's logical switch port bound to this chassis?", port.ID, side, got[side].OFPort)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// podGoneFromNode says whether pod (namespace/name) is no live pod of this
// node, as the node may read it: deleted (NotFound), or not bound to this
// node (the node authorizer answers Forbidden). A pod being deleted still
// counts as live: its port is not handed on before it is gone.
func podGoneFromNode(ctx context.Context, kube corev1client.PodsGetter, pod string) bool {
	ns, name, ok := strings.Cut(pod, "/")
	if !ok {
		return false
	}
	_, err := kube.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}

// nodeMode is the node's plug mode: its annotation, else the configured one.
func nodeMode(ctx context.Context, kube corev1client.NodesGetter, p *PoolConfig) (plug.Mode, error) {
	node, err := kube.Nodes().Get(ctx, p.Node, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read node %s for its plug mode: %w", p.Node, err)
	}
	if v, ok := node.Annotations[plug.ModeAnnotation]; ok {
		return plug.ParseMode("node "+p.Node+" annotation "+plug.ModeAnnotation, v)
	}
	return plug.ParseMode("pool.plugMode", p.PlugMode)
}

func writeState(dir, containerID string, st sandboxState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	return atomicfile.Write(statePath(dir, containerID), data, 0o600)
}

func readState(dir, containerID string) (sandboxState, bool, error) {
	data, err := os.ReadFile(statePath(dir, containerID))
	if errors.Is(err, fs.ErrNotExist) {
		return sandboxState{}, false, nil
	}
	if err != nil {
		return sandboxState{}, false, err
	}
	var st sandboxState
	if err := json.Unmarshal(data, &st); err != nil {
		return sandboxState{}, false, fmt.Errorf("%s: %w", statePath(dir, containerID), err)
	}
	return st, true, nil
}

// pooledSandbox reads what netshift-cni wired a sandbox with. A sandbox it
// did not wire is the wrapped plugin's: delegate (its DEL or CHECK) is run
// with the plugin's configuration and pooled is false.
func (c *Config) pooledSandbox(containerID string, delegate func(context.Context, string, []byte, invoke.Exec) error) (st sandboxState, pooled bool, err error) {
	st, pooled, err = readState(c.Pool.StateDir, containerID)
	if err != nil {
		return st, false, fmt.Errorf("netshift-cni: node %s: sandbox %s: %w", c.Pool.Node, containerID, err)
	}
	if pooled {
		return st, true, nil
	}
	typ, conf, err := c.delegateConf()
	if err != nil {
		return st, false, err
	}
	return st, false, delegate(context.Background(), typ, conf, nil)
}

// poolDel undoes a pooled sandbox's ADD: the port comes off the node's
// switch and its device goes; the Neutron port is the pool's to recycle once
// the pod is gone. Any other sandbox is the wrapped plugin's.
func poolDel(args *skel.CmdArgs, c *Config) error {
	st, pooled, err := c.pooledSandbox(args.ContainerID, invoke.DelegateDel)
	if err != nil || !pooled {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	newer, err := otherSandboxHolds(c.Pool.StateDir, args.ContainerID, st)
	if err != nil {
		return fmt.Errorf("netshift-cni: node %s: pod %s: sandbox %s: %w", c.Pool.Node, st.Pod, args.ContainerID, err)
	}
	// A newer sandbox of the pod holds the port (and the node end's name) now: its DEL unplugs it.
	if !newer {
		sw, err := ovs.OpenSwitch(ctx, c.Pool.OVSDB)
		if err == nil {
			_, err = undoWiring(ctx, sw, c.Pool, st, args.Netns, args.IfName)
			sw.Close()
		}
		if err != nil {
			return fmt.Errorf("netshift-cni: node %s: pod %s: sandbox %s: %w", c.Pool.Node, st.Pod, args.ContainerID, err)
		}
	}
	if err := os.Remove(statePath(c.Pool.StateDir, args.ContainerID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("netshift-cni: node %s: %w", c.Pool.Node, err)
	}
	return nil
}

// otherSandboxHolds says whether a live sandbox other than containerID was
// wired to the same pod's port. The record of a sandbox whose namespace is
// gone is removed on the way: nothing will ever ask its DEL.
func otherSandboxHolds(dir, containerID string, st sandboxState) (bool, error) {
	records, err := sandboxRecords(dir)
	if err != nil {
		return false, err
	}
	for _, other := range records {
		if other.containerID == containerID {
			continue
		}
		if _, err := os.Stat(other.Netns); other.Netns == "" || errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(statePath(dir, other.containerID))
			continue
		}
		if other.Pod == st.Pod && other.PortID == st.PortID {
			return true, nil
		}
	}
	return false, nil
}

// sandboxRecord is one sandbox's record, with the sandbox's ID.
type sandboxRecord struct {
	sandboxState
	containerID string
}

// sandboxRecords reads every sandbox record in dir (none when dir does not
// exist yet). An unreadable record is left out: it is its own sandbox's
// DEL's business.
func sandboxRecords(dir string) ([]sandboxRecord, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var records []sandboxRecord
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if st, found, err := readState(dir, id); err == nil && found {
			records = append(records, sandboxRecord{sandboxState: st, containerID: id})
		}
	}
	return records, nil
}

// undoWiring undoes a sandbox's wiring at its DEL: its device parked
// (parked true) when the node keeps it, else unplugged and removed.
func undoWiring(ctx context.Context, sw *ovs.Switch, p *PoolConfig, st sandboxState, netnsPath, ifName string) (parked bool, err error) {
	if parkPooled(ctx, sw, p, st, netnsPath, ifName) {
		return true, nil
	}
	return false, unwirePooled(ctx, sw, p, st, ifName)
}

// unwirePooled unplugs the sandbox's plug of its port and removes its node
// end, only if that end is still this sandbox's: once the pool handed the
// port on, a newer pod's node end has the same name.
func unwirePooled(ctx context.Context, sw *ovs.Switch, p *PoolConfig, st sandboxState, ifName string) error {
	plugged, err := sw.Plugged(ctx)
	if err != nil {
		return err
	}
	for _, pl := range plugged {
		// Only this pod's plug of the port: a newer sandbox's pod may hold it by now.
		if pl.PortID == st.PortID && pl.Owner == st.Pod {
			if err := sw.Unplug(ctx, pl, p.Bridge); err != nil {
				return err
			}
		}
	}
	link := podLink{Netns: st.Netns, IfName: ifName, HostName: st.Tap}
	if !link.hostEndIsOurs() {
		return nil // gone with the sandbox's namespace, or another pod's by now
	}
	return deleteHostLink(st.Tap)
}

// poolCheck verifies a pooled pod's interface still carries its port's MAC
// and addresses, as the operator recorded them.
func poolCheck(args *skel.CmdArgs, c *Config) error {
	st, pooled, err := c.pooledSandbox(args.ContainerID, invoke.DelegateCheck)
	if err != nil || !pooled {
		return err
	}
	pod, _ := podOf(args.Args)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kube, err := podsAsTheNode(c.Pool.Kubeconfig)
	if err != nil {
		return fmt.Errorf("netshift-cni: node %s: %w", c.Pool.Node, err)
	}
	cur, err := kube.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("netshift-cni: node %s: pod %s: %w", c.Pool.Node, pod, err)
	}
	a, done, err := assignmentOf(cur, pod, c.Pool.Node)
	if err == nil && !done {
		err = fmt.Errorf("pod %s: its port's record is gone", pod)
	}
	if err == nil && a.ID != st.PortID {
		err = fmt.Errorf("pod %s: wired to port %s, but its record now says port %s", pod, st.PortID, a.ID)
	}
	var iface portpool.Interface
	if err == nil {
		iface, err = portpool.InterfaceOf(a)
	}
	if err == nil {
		err = podLink{Netns: args.Netns, IfName: args.IfName}.check(iface)
	}
	if err != nil {
		return fmt.Errorf("netshift-cni: node %s: %w", c.Pool.Node, err)
	}
	return nil
}
