package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/heldframes"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
)

// portPlugger plugs the ports of the pods (and VMs) on its node: the agent's
// half of per-port plugging. It reads the pod and the switch, asks package
// plug what may be done, does it in the node's OVSDB and reports the pod's
// network-ready condition.
type portPlugger struct {
	client client.Client
	// nodeReader reads past the cache: the node, so that a plug mode just set
	// applies to the very next plug, and a migration's source pod, which runs
	// on another node than the cache's pods.
	nodeReader client.Reader
	node       string
	// netns is the node's network namespace ("" for the agent's own).
	netns       string
	db          *ovs.Switch
	integration string
	defaultMode plug.Mode
	// ovn: readiness is ovn-controller's ovn-installed=true, not just an ofport.
	ovn bool

	mu sync.Mutex
	// plugged are the ports this process has plugged (or repaired) once,
	// with when: readiness is then polled without plugging again.
	plugged map[string]time.Time
	// announced are the migration targets (port/pod UID) whose RARP was sent,
	// and ahead what activateAhead did for each, once.
	announced map[string]bool
	ahead     map[string]string
	// tapless are the Held ports this process plugged whose tap it has not
	// attached since (plug.Port.Held).
	tapless map[string]bool
	// keeping are the ports whose held frames a goroutine keeps for the VM,
	// with what ends it.
	keeping map[string]context.CancelFunc
	// datapath is the integration bridge's datapath type, read once.
	datapath string

	// cniState is netshift-cni's sandbox records ("" when it wires no pods):
	// a gone pod's port it wired is left to its DEL, which may park it.
	cniState string
	// goneSince is when each such pod was first seen deleted.
	goneSince map[string]time.Time
	// cniDelGrace is how long a deleted pod's port that netshift-cni wired
	// is left to its DEL.
	cniDelGrace time.Duration
	// parkedMax and parkedTTL bound the devices netshift-cni parks.
	parkedMax int
	parkedTTL time.Duration
}

// defaultCNIDelGrace is how long a deleted pod's port that netshift-cni
// wired is left to its DEL: the kubelet tears a sandbox down within seconds
// of a forced deletion.
const defaultCNIDelGrace = 30 * time.Second

// Reasons of the network-ready condition.
const (
	reasonReady            = v1alpha1.ReasonPortReady
	reasonWaitingForDevice = v1alpha1.ReasonWaitingForDevice
	reasonBinding          = v1alpha1.ReasonWaitingForBinding
	reasonRefused          = v1alpha1.ReasonPlugRefused
	reasonInvalid          = v1alpha1.ReasonInvalidPort
)

func (pp *portPlugger) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	owner := req.String()
	logger := log.FromContext(ctx).WithValues("node", pp.node, "pod", owner)
	plugged, err := pp.agentPlugged(ctx)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
	}
	var pod corev1.Pod
	err = pp.client.Get(ctx, req.NamespacedName, &pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	podExists := err == nil
	gone := apierrors.IsNotFound(err) || pod.DeletionTimestamp != nil || pod.Spec.NodeName != pp.node ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	var port plug.Port
	has := false
	var invalid, notAllowed error
	if !gone {
		// An annotation that became invalid asks for no port: what was plugged for it goes.
		if port, has, invalid = plug.PortOf(pod.Annotations, string(pod.UID)); invalid != nil {
			has = false
		}
	}
	if has {
		// A port the pod names itself is plugged only as its namespace allows
		// (the pools' netshift.io/port is the operator's, never the pod's):
		// one it no longer may have goes too.
		if notAllowed, err = pp.allowSpec(ctx, &pod, port, plugged); err != nil {
			return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
		}
		has = notAllowed == nil
	}
	// Unplug what the pod no longer wants: all of it when it is gone, has no
	// port or an invalid one, an older port when its port changed.
	var keep *plug.Port
	if !gone && has {
		keep = &port
	}
	plugged, later, err := pp.unplugUnwanted(ctx, owner, plugged, keep, gone, podExists)
	if err != nil {
		return ctrl.Result{}, err
	}
	if invalid != nil {
		msg := invalid.Error() + "; no port is plugged for the pod until the annotation is fixed"
		return ctrl.Result{}, pp.setCondition(ctx, &pod, corev1.ConditionFalse, reasonInvalid, msg)
	}
	if notAllowed != nil {
		logger.Info("plug refused", "port", port.ID, "reason", notAllowed.Error())
		var again time.Duration
		if errors.Is(notAllowed, plug.ErrAtLimit) {
			again = 10 * time.Second // another of the namespace's ports may go
		}
		return ctrl.Result{RequeueAfter: max(again, later)}, pp.setCondition(ctx, &pod, corev1.ConditionFalse, reasonRefused, fmt.Sprintf("node %s: %v", pp.node, notAllowed))
	}
	if gone || !has {
		return ctrl.Result{RequeueAfter: later}, nil
	}

	mode, err := pp.mode(ctx)
	if err != nil {
		return ctrl.Result{}, pp.setCondition(ctx, &pod, corev1.ConditionFalse, reasonRefused, err.Error())
	}
	port.Held = migrationTarget(mode, &pod)
	adm, err := plug.Admit(mode, plugged, port, owner)
	if err != nil {
		logger.Info("plug refused", "port", port.ID, "reason", err.Error())
		// The conflict may clear (the other ports go, the node's mode is set back).
		return ctrl.Result{RequeueAfter: 5 * time.Second}, pp.setCondition(ctx, &pod, corev1.ConditionFalse, reasonRefused,
			fmt.Sprintf("node %s: %v", pp.node, err))
	}
	since, done := pp.pluggedAt(port.ID)
	if !done {
		used, err := pp.tapInUse(ctx, port.Tap)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
		}
		if err := plug.CheckTap(port, used); err != nil {
			logger.Info("plug refused", "port", port.ID, "reason", err.Error())
			return ctrl.Result{}, pp.setCondition(ctx, &pod, corev1.ConditionFalse, reasonRefused, fmt.Sprintf("node %s: %v", pp.node, err))
		}
		dp, err := pp.datapathType(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		if adm.Discard != nil {
			// The port's device parked the other way: the node's mode changed since.
			if err := pp.db.Unplug(ctx, *adm.Discard, pp.integration); err != nil {
				return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
			}
		}
		if err := pp.db.Plug(ctx, mode, port, owner, adm.Isolate, pp.integration, dp); err != nil {
			return ctrl.Result{}, fmt.Errorf("node %s: %w", pp.node, err)
		}
		logger.Info("plugged", "port", port.ID, "mode", mode, "tap", port.Tap, "isolated", adm.Isolate, "tapHeldBack", port.Held)
		since = pp.remember(port.ID, port.Held)
	}

	return pp.reportReady(ctx, &pod, mode, port, adm, since)
}

// allowSpec applies the pod's namespace's settings to a port the pod names
// in netshift.io/port-spec: nil when the port is the pool's, or allowed.
func (pp *portPlugger) allowSpec(ctx context.Context, pod *corev1.Pod, port plug.Port, plugged []plug.Plugged) (notAllowed, err error) {
	if _, named := pod.Annotations[plug.PortSpecAnnotation]; !named {
		return nil, nil
	}
	owner := pod.Namespace + "/" + pod.Name
	var ns corev1.Namespace
	if err := pp.client.Get(ctx, types.NamespacedName{Name: pod.Namespace}, &ns); err != nil {
		return nil, fmt.Errorf("read namespace %s for its port settings: %w", pod.Namespace, err)
	}
	// An admin's typo, a limit lowered, or another namespace given overlapping
	// port IDs stops new plugs, not the ports already in use: those go only
	// when the admin withdraws the namespace's opt-in or the port itself.
	inUse := slices.ContainsFunc(plugged, func(pl plug.Plugged) bool { return pl.PortID == port.ID && pl.Owner == owner })
	keep := func(why error) error {
		if inUse {
			log.FromContext(ctx).Info("keeping a plugged port", "node", pp.node, "pod", owner, "port", port.ID, "though", why.Error())
			return nil
		}
		return why
	}
	np, err := plug.NamespacePortsOf(ns.Name, ns.Labels, ns.Annotations)
	if err != nil {
		return keep(err), nil
	}
	if notAllowed := np.Allow(port, owner, plugged); notAllowed != nil {
		if errors.Is(notAllowed, plug.ErrAtLimit) {
			return keep(notAllowed), nil // a limit lowered under ports in use bounds new ones
		}
		return notAllowed, nil
	}
	shared, err := pp.namesShared(ctx, np, port)
	if err != nil || shared == nil {
		return nil, err
	}
	return keep(shared), nil
}

// namesShared refuses a port whose derived names another opted-in namespace's
// ports could have too: a configuration an admin must fix.
func (pp *portPlugger) namesShared(ctx context.Context, np plug.NamespacePorts, port plug.Port) (notAllowed, err error) {
	var all corev1.NamespaceList
	if err := pp.client.List(ctx, &all, client.MatchingLabels{plug.PortSpecOptInLabel: plug.PortSpecEnabled}); err != nil {
		return nil, fmt.Errorf("list the namespaces opted in to %s: %w", plug.PortSpecAnnotation, err)
	}
	for _, other := range all.Items {
		if other.Name == np.Namespace {
			continue
		}
		on, err := plug.NamespacePortsOf(other.Name, other.Labels, other.Annotations)
		if err != nil {
			continue
		}
		if entry, shared := on.MayShareNames(port.ID); shared {
			return fmt.Errorf("port %s: %w: its names (%s, %s) could be those of namespace %s's ports too (its %s entry %s); "+
				"a cluster admin gives the two namespaces port IDs that differ in their first 11 characters",
				plug.Clip(port.ID), plug.ErrNotAllowed, port.Tap, plug.NamesFor(port.ID).Bridge, other.Name, plug.PortIDsAnnotation, plug.Clip(entry)), nil
		}
	}
	return nil, nil
}

// unplugUnwanted unplugs the owner's plugs but keep's, and returns what is
// plugged then. A gone pod's port that netshift-cni wired is left to its DEL
// (leaveToCNI): later is when to look again.
func (pp *portPlugger) unplugUnwanted(ctx context.Context, owner string, plugged []plug.Plugged, keep *plug.Port, gone, podExists bool) ([]plug.Plugged, time.Duration, error) {
	logger := log.FromContext(ctx).WithValues("node", pp.node, "pod", owner)
	var later time.Duration
	for _, pl := range slices.Clone(plugged) {
		if pl.Owner != owner || keep != nil && pl.PortID == keep.ID {
			continue
		}
		if gone {
			if wait := pp.leaveToCNI(owner, pl.PortID, podExists); wait > 0 {
				logger.V(1).Info("leaving the port to netshift-cni's DEL", "port", pl.PortID, "for", wait.String())
				later = max(later, wait)
				continue
			}
		}
		logger.Info("unplugging", "port", pl.PortID, "mode", pl.Mode)
		if err := pp.db.Unplug(ctx, pl, pp.integration); err != nil {
			return nil, 0, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
		}
		pp.forget(pl.PortID)
		plugged = without(plugged, pl.PortID)
	}
	if later == 0 {
		pp.forgetGone(owner)
	}
	return plugged, later, nil
}

// tapInUse reads what the node has under a tap name, in its switch and
// among its network devices: a port-spec comes from the pod, so the tap it
// names is checked against the node itself before anything is plugged.
func (pp *portPlugger) tapInUse(ctx context.Context, tap string) (plug.TapInUse, error) {
	used, err := pp.db.TapInUse(ctx, tap)
	if err != nil || used.InSwitch {
		return used, err
	}
	h, err := netdev.Open(pp.netns)
	if err != nil {
		return used, err
	}
	defer h.Close()
	dev, found, err := h.Device(tap)
	if err != nil || !found {
		return used, err
	}
	used.Device, used.Kind, used.Master, used.Addresses = true, dev.Kind, dev.Master, dev.Addresses
	return used, nil
}

// announce sends a migration target's RARP once per pod, again after 50 and
// 150 ms in case the first is taken before the chassis installed its flows.
func (pp *portPlugger) announce(ctx context.Context, p plug.Port, podUID string) error {
	key := p.ID + "/" + podUID
	pp.mu.Lock()
	done := pp.announced[key]
	pp.announced[key] = true
	pp.mu.Unlock()
	if done {
		return nil
	}
	mac, err := net.ParseMAC(p.MAC)
	if err != nil {
		return err
	}
	if err := pp.db.Announce(ctx, p.ID, mac); err != nil {
		return err
	}
	go func() {
		for _, wait := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
			time.Sleep(wait)
			if err := pp.db.Announce(context.Background(), p.ID, mac); err != nil {
				log.FromContext(ctx).V(1).Info("repeated announce failed", "port", p.ID, "error", err.Error())
				return
			}
		}
	}()
	return nil
}

// activateAhead activates a migration target's port before the VM resumes
// and says what it did, for the pod's condition.
//
// OVN blocks the port on the target until a RARP comes from it. Nothing can
// come from this side before the VM runs here, so the agent sends that RARP
// now, through the port bridge, and the port's flows are live when the VM
// resumes instead of when OVN has seen the hypervisor's own RARP (up to 360
// ms later, measured in the lab). Activated, the port gets every frame of the
// migration. Once the VM's tap is here (QEMU under libvirt or virt-launcher
// opens it as the incoming VM starts, seconds before the resume, and maybe
// after this), its queue would fill with them, and the resumed VM would take
// those stale frames first while the new ones were dropped (about 20 at 100
// a second, measured): so the port bridge holds them back until the VM
// itself speaks (ovs.HoldForVM), whenever its tap comes, and the agent gives
// the resumed VM those that reached neither host (keepHeldFrames). The tap
// joins the bridge only once the hold is in place (plug.Port.Held): before,
// the bridge's NORMAL flow would pass OVN's frames to it.
func (pp *portPlugger) activateAhead(ctx context.Context, port plug.Port, pod *corev1.Pod) (said string, err error) {
	key := port.ID + "/" + string(pod.UID)
	pp.mu.Lock()
	said, done := pp.ahead[key]
	pp.mu.Unlock()
	if done {
		return said, nil
	}
	// The migration is over once its source pod is gone: a target whose agent
	// started after that runs its VM, which must be neither held nor announced.
	var source corev1.Pod
	// Read past the cache, which holds only this node's pods.
	err = pp.nodeReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Annotations[plug.MigrationTargetAnnotation]}, &source)
	switch {
	case apierrors.IsNotFound(err):
		if err := pp.attachTap(ctx, port); err != nil {
			return "", err
		}
		pp.rememberAhead(key, "")
		return "", nil
	case err != nil:
		return "", fmt.Errorf("its migration's source pod: %w", err)
	}
	kept := pp.keepHeldFrames(ctx, port)
	if err := pp.db.HoldForVM(ctx, port.ID); err != nil {
		pp.stopKeeping(port.ID)
		return "", err
	}
	if err := pp.attachTap(ctx, port); err != nil {
		return "", err
	}
	held := ", the VM's traffic held at it until the VM speaks"
	if kept {
		held += ", its newest frames kept for it"
	}
	if err := pp.announce(ctx, port, string(pod.UID)); err != nil {
		return "", err
	}
	said = "; activated ahead of the VM (RARP sent through " + plug.NamesFor(port.ID).Bridge + held + ")"
	pp.rememberAhead(key, said)
	return said, nil
}

// keepHeldFrames starts keeping what the port bridge holds for a migration's
// target, to give the resumed VM what reached neither host (package
// heldframes), and says whether it does. Without it, the hold drops those
// frames, as it did before the agent kept them: the migration goes on.
func (pp *portPlugger) keepHeldFrames(ctx context.Context, port plug.Port) bool {
	logger := log.FromContext(ctx).WithValues("node", pp.node, "port", port.ID)
	pp.mu.Lock()
	_, kept := pp.keeping[port.ID]
	pp.mu.Unlock()
	if kept {
		return true
	}
	mac, err := net.ParseMAC(port.MAC)
	if err == nil {
		var h *heldframes.Hold
		if h, err = heldframes.Open(heldframes.Options{Netns: pp.netns, Device: plug.NamesFor(port.ID).Bridge, VM: mac}); err == nil {
			pp.serveHold(logger, port.ID, h)
			return true
		}
	}
	logger.Info("the VM's held frames will not be kept for it", "error", err.Error())
	return false
}

// serveHold serves a hold until it ends or the port is forgotten.
func (pp *portPlugger) serveHold(logger logr.Logger, id string, h *heldframes.Hold) {
	ctx, cancel := context.WithCancel(context.Background())
	pp.mu.Lock()
	pp.keeping[id] = cancel
	pp.mu.Unlock()
	go func() {
		defer cancel()
		st, err := h.Serve(ctx)
		pp.mu.Lock()
		delete(pp.keeping, id)
		pp.mu.Unlock()
		kv := []any{"held", st.Held, "given", st.Replayed, "forwarded", st.Forwarded, "unfit", st.Unfit, "vmSpoke", st.Spoke}
		if st.Spoke {
			kv = append(kv, "vmSpokeAt", st.SpokeAt.UTC().Format(time.RFC3339Nano))
		}
		if st.LastUnfit != "" {
			kv = append(kv, "unfitWhy", st.LastUnfit)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			kv = append(kv, "error", err.Error())
		}
		logger.Info("hold for the migrated VM over", kv...)
	}()
}

// stopKeeping ends the hold of a port, if one is served.
func (pp *portPlugger) stopKeeping(id string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if cancel, ok := pp.keeping[id]; ok {
		cancel()
	}
}

// rememberAhead records what activateAhead did for a target pod's port.
func (pp *portPlugger) rememberAhead(key, said string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.ahead[key] = said
}

// readiness says whether the port's integration side is bound with its flows
// in place: in per-port mode that is the patch port, ready before the tap exists.
func (pp *portPlugger) readiness(ctx context.Context, mode plug.Mode, p plug.Port) (bool, string, string, error) {
	side := p.Tap
	if mode == plug.PerPort {
		side = plug.NamesFor(p.ID).IntegrationPatch
	}
	ifaces, err := pp.db.Interfaces(ctx, side)
	if err != nil {
		return false, "", "", err
	}
	i := ifaces[side]
	where := fmt.Sprintf("port %s on node %s (%s, %s)", p.ID, pp.node, mode, side)
	switch {
	case i.OFPort <= 0 && mode == plug.Direct:
		return false, reasonWaitingForDevice, where + ": the tap does not exist yet", nil
	case i.OFPort <= 0:
		return false, reasonBinding, where + ": not attached yet", nil
	case pp.ovn && !i.OVNInstalled:
		return false, reasonBinding, where + ": waiting for ovn-controller to install the port's flows", nil
	}
	return true, reasonReady, where + ": bound, flows installed", nil
}

// mode is the node's plug mode: its annotation, else the agent's default.
func (pp *portPlugger) mode(ctx context.Context) (plug.Mode, error) {
	var node corev1.Node
	if err := pp.nodeReader.Get(ctx, types.NamespacedName{Name: pp.node}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return pp.defaultMode, nil
		}
		return "", err
	}
	if v, ok := node.Annotations[plug.ModeAnnotation]; ok {
		return plug.ParseMode("node "+pp.node+" annotation "+plug.ModeAnnotation, v)
	}
	return pp.defaultMode, nil
}

func (pp *portPlugger) datapathType(ctx context.Context) (string, error) {
	pp.mu.Lock()
	dp := pp.datapath
	pp.mu.Unlock()
	if dp != "" {
		return dp, nil
	}
	dp, err := pp.db.DatapathType(ctx, pp.integration)
	if err != nil {
		return "", fmt.Errorf("node %s: integration bridge %s: %w", pp.node, pp.integration, err)
	}
	pp.mu.Lock()
	pp.datapath = dp
	pp.mu.Unlock()
	return dp, nil
}

func (pp *portPlugger) pluggedAt(id string) (time.Time, bool) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	t, ok := pp.plugged[id]
	return t, ok
}

func (pp *portPlugger) remember(id string, tapless bool) time.Time {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	now := time.Now()
	pp.plugged[id] = now
	if tapless {
		pp.tapless[id] = true
	}
	return now
}

// attachTap attaches the tap of a port this process plugged Held, once.
func (pp *portPlugger) attachTap(ctx context.Context, port plug.Port) error {
	pp.mu.Lock()
	tapless := pp.tapless[port.ID]
	pp.mu.Unlock()
	if !tapless {
		return nil
	}
	if err := pp.db.AttachTap(ctx, port); err != nil {
		return err
	}
	pp.mu.Lock()
	delete(pp.tapless, port.ID)
	pp.mu.Unlock()
	return nil
}

func (pp *portPlugger) forget(id string) {
	pp.stopKeeping(id)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	delete(pp.plugged, id)
	delete(pp.tapless, id)
	for key := range pp.announced {
		if strings.HasPrefix(key, id+"/") {
			delete(pp.announced, key)
		}
	}
	for key := range pp.ahead {
		if strings.HasPrefix(key, id+"/") {
			delete(pp.ahead, key)
		}
	}
}

func without(plugged []plug.Plugged, id string) []plug.Plugged {
	var out []plug.Plugged
	for _, pl := range plugged {
		if pl.PortID != id {
			out = append(out, pl)
		}
	}
	return out
}

// reportReady sets the pod's condition from its port's readiness, lifting an
// isolation and, for a migration's target, activating the port ahead of the
// VM, once the port is bound.
func (pp *portPlugger) reportReady(ctx context.Context, pod *corev1.Pod, mode plug.Mode, port plug.Port, adm plug.Admission, since time.Time) (ctrl.Result, error) {
	owner := pod.Namespace + "/" + pod.Name
	logger := log.FromContext(ctx).WithValues("node", pp.node, "pod", owner)
	ready, reason, msg, err := pp.readiness(ctx, mode, port)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
	}
	if !ready {
		// Poll fast at first: a migration waits on this before it resumes the VM.
		wait := 20 * time.Millisecond
		if time.Since(since) > 10*time.Second {
			wait = time.Second
		}
		return ctrl.Result{RequeueAfter: wait}, pp.setCondition(ctx, pod, corev1.ConditionFalse, reason, msg)
	}
	// A migration's target is held before an isolation is lifted: never a
	// moment with the bridge's NORMAL flow between the patch and the tap.
	if migrationTarget(mode, pod) {
		ahead, err := pp.activateAhead(ctx, port, pod)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
		}
		msg += ahead
	} else if err := pp.attachTap(ctx, port); err != nil { // no longer a migration's target
		return ctrl.Result{}, fmt.Errorf("node %s: pod %s: %w", pp.node, owner, err)
	}
	if (adm.Existing != nil && adm.Existing.Isolated) || adm.Isolate {
		if err := pp.db.Activate(ctx, port.ID); err != nil {
			return ctrl.Result{}, fmt.Errorf("node %s: %w", pp.node, err)
		}
		logger.Info("activated", "port", port.ID)
	}
	return ctrl.Result{}, pp.setCondition(ctx, pod, corev1.ConditionTrue, reasonReady, msg)
}

// migrationTarget says whether the pod is a migration's target plugged
// per-port: its port is activated ahead of its VM, and held for it.
func migrationTarget(mode plug.Mode, pod *corev1.Pod) bool {
	return mode == plug.PerPort && pod.Annotations[plug.MigrationTargetAnnotation] != ""
}

// maxConditionMessage bounds a condition's message: parts of it come from
// the pod, and every reader of the pod pays for its size.
const maxConditionMessage = 1024

// setCondition writes the pod's network-ready condition when it changed, as
// a strategic merge patch of that one condition: the kubelet's stay.
func (pp *portPlugger) setCondition(ctx context.Context, pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) error {
	if len(msg) > maxConditionMessage {
		msg = msg[:maxConditionMessage] + "..."
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == plug.ReadyCondition && c.Status == status && c.Reason == reason && c.Message == msg {
			return nil
		}
	}
	cond := corev1.PodCondition{Type: plug.ReadyCondition, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	for _, c := range pod.Status.Conditions {
		if c.Type == plug.ReadyCondition && c.Status == status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	if err := pp.client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node %s: pod %s/%s: condition %s: %w", pp.node, pod.Namespace, pod.Name, plug.ReadyCondition, err)
	}
	return nil
}

// cleanup unplugs, once the cache has synced after a start, what was left
// plugged for pods that are gone: deletions this agent missed while it was down.
func (pp *portPlugger) cleanup(ctx context.Context) error {
	plugged, err := pp.agentPlugged(ctx)
	if err != nil {
		return fmt.Errorf("node %s: cleanup: %w", pp.node, err)
	}
	wanted := map[string]string{}
	var errs []error
	for _, pl := range plugged {
		ns, name, _ := strings.Cut(pl.Owner, "/")
		var pod corev1.Pod
		err := pp.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && pod.DeletionTimestamp == nil && pod.Spec.NodeName == pp.node {
			if p, ok, perr := plug.PortOf(pod.Annotations, string(pod.UID)); ok && perr == nil {
				wanted[pl.Owner] = p.ID
			}
		}
	}
	for _, pl := range plug.Stale(plugged, wanted) {
		log.FromContext(ctx).Info("unplugging a stale port", "node", pp.node, "port", pl.PortID, "owner", pl.Owner, "mode", pl.Mode)
		if err := pp.db.Unplug(ctx, pl, pp.integration); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// agentPlugged lists what the agent plugs and unplugs on the node: every
// plug but subports' access ports on the trunk bridge, which netshift-cni
// makes at a sandbox's ADD and removes at its DEL.
func (pp *portPlugger) agentPlugged(ctx context.Context) ([]plug.Plugged, error) {
	plugged, err := pp.db.Plugged(ctx)
	return slices.DeleteFunc(plugged, func(pl plug.Plugged) bool { return pl.Mode == plug.Subport }), err
}

// addPortPlugger adds the port plugging controller to an agent's manager.
func addPortPlugger(mgr ctrl.Manager, o Options, sw *ovs.Switch) error {
	if sw == nil {
		return fmt.Errorf("node %s: plugging ports needs the node's OVSDB (--ovsdb)", o.Node)
	}
	pp := &portPlugger{client: mgr.GetClient(), nodeReader: mgr.GetAPIReader(), node: o.Node, netns: o.NodeNetns, db: sw, integration: o.IntegrationBridge,
		defaultMode: o.PlugMode, plugged: map[string]time.Time{}, announced: map[string]bool{}, ahead: map[string]string{}, tapless: map[string]bool{}, keeping: map[string]context.CancelFunc{}, goneSince: map[string]time.Time{}}
	if o.CNI.Pool != nil {
		pp.cniState, pp.parkedMax, pp.parkedTTL = o.CNI.Pool.StateDir, o.CNI.Pool.ParkedDevices, o.CNI.ParkedTTL
		if pp.cniDelGrace = o.CNI.DelGrace; pp.cniDelGrace == 0 {
			pp.cniDelGrace = defaultCNIDelGrace
		}
		if pp.parkedTTL == 0 {
			pp.parkedTTL = 5 * time.Minute
		}
		if err := addLogged(mgr, manager.RunnableFunc(pp.sweepParkedEvery)); err != nil {
			return err
		}
	}
	if pp.integration == "" {
		pp.integration = "br-int"
	}
	if pp.defaultMode == "" {
		pp.defaultMode = plug.PerPort
	}
	remote, err := pp.db.OpenvSwitchExternalID(context.Background(), "ovn-remote")
	if err != nil {
		return fmt.Errorf("node %s: %w", o.Node, err)
	}
	pp.ovn = remote != ""
	// A namespace's port settings changed (opted in or out, its ports, its
	// limit): the node's pods that name a port are decided again, in every
	// namespace, as one namespace's ports can share names with another's.
	namespacePods := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var pods corev1.PodList
		if err := pp.client.List(ctx, &pods); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, p := range pods.Items {
			if _, named := p.Annotations[plug.PortSpecAnnotation]; named {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
			}
		}
		return reqs
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("ports").For(&corev1.Pod{}).
		Watches(&corev1.Namespace{}, namespacePods).Complete(pp); err != nil {
		return fmt.Errorf("node %s: set up port plugging: %w", o.Node, err)
	}
	return addLogged(mgr, manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		if err := pp.cleanup(ctx); err != nil {
			log.FromContext(ctx).Error(err, "cleaning up stale ports", "node", o.Node)
		}
		return nil
	}))
}
