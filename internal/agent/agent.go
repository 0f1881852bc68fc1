package agent

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/retry"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/plugins"
	"netshift.io/netshift/internal/nodehost"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/scheme"
)

// Work does an operation's work on the node. It must be idempotent: a
// restarted agent may run it again for the same operation if it died before
// reporting the result.
type Work func(ctx context.Context, node string, op v1alpha1.NodeOperation) error

// Agent runs its node's plan.
type Agent struct {
	Client client.Client
	Node   string
	// NodeNetns, OVSDB and UnderlayInterface locate the node (see Options).
	NodeNetns, OVSDB, UnderlayInterface string
	// Switch is the connection to the node's OVSDB (nil without one).
	Switch *ovs.Switch
	// OperatorTimeURL and MaxClockSkew set the clock check (see Options).
	OperatorTimeURL string
	MaxClockSkew    time.Duration
	// now is the agent's clock (time.Now, shifted by Options.ClockOffset in tests).
	now func() time.Time
	// Reboot reboots the node (see Options).
	Reboot Rebooter
	// NetworkConfig and BootIDFile locate the node's files (see Options).
	NetworkConfig, BootIDFile string
	// Host, when set, is the node in place of the real one these fields locate (see Options.Host).
	Host nodehost.Host
	// Plugin is the network plugin's driver on this node: every step of a live change but
	// netshift's own NetworkConfig is its.
	Plugin netplugin.Node
	// PluginName is the driver's name (--network-plugin).
	PluginName string
	// failSteps counts the runs of each step still to fail (tests' fault injection).
	failSteps map[v1alpha1.StepAction]int
	// doneAt and settled track the pass that aligns, once a change is done, the pods its steps
	// could not list yet (see settleDelay).
	doneAt  map[string]time.Time
	settled map[string]bool
	// Pods lists the node's pods from its container runtime (see Options).
	Pods nodenet.NodePods
	// IntegrationBridge is the bridge pods are attached to (default br-int).
	IntegrationBridge string
	// Work maps an operation kind to what the agent does for it.
	Work map[v1alpha1.OperationKind]Work
	// cni is how netshift-cni is installed on the node (nil: it is not); gate, once netshift
	// was taken off the node (`netshift uninstall`), keeps anything from putting it back.
	cni  *CNIInstall
	gate *offGate
	// reported is what this agent reported of each live change plan (see planMemory).
	reported planMemory
	// drawTurn is Options.drawTurn.
	drawTurn func(spread time.Duration) time.Duration
	// startedAt is when the agent's first pass ran, by its clock: a plan written before then
	// reached it by its start, and its delay says nothing of how plans reach agents
	// (PlanReachedMs).
	startedAt time.Time
	// reader reads the node's state past the cache, to lay a report again on a conflict
	// (nil: through Client).
	reader client.Reader
}

// HoldWork is the Reconfigure work until netshift has node settings to
// re-apply (later issues add them): it keeps the node drained for d, which is
// also what the demo uses to make the waves visible.
func HoldWork(d time.Duration) Work {
	return func(ctx context.Context, _ string, _ v1alpha1.NodeOperation) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Options configure an agent process.
type Options struct {
	Node string
	// Work maps an operation kind to what the agent does for it.
	Work map[v1alpha1.OperationKind]Work
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string
	// ManyInProcess allows several agents in one process (tests).
	ManyInProcess bool
	// Shared, when set, is the type information of every agent in the process.
	Shared *Shared
	// NodeNetns, when set, is the network namespace of the node (the lab's nodes are namespaces;
	// a DaemonSet agent runs in the host's, and leaves it empty). The agent refuses to start if
	// it is set and does not exist.
	NodeNetns string
	// OVSDB, when set, is the node's OVSDB socket (unix:PATH); the agent refuses to start if it
	// cannot connect, and its readiness check fails when it stops answering.
	OVSDB string
	// UnderlayInterface is the node's interface onto the underlay, whose MTU a new pod MTU must
	// fit under (with the tunnel overhead); empty skips that check.
	UnderlayInterface string
	// OperatorTimeURL is the operator's /time endpoint the clock check measures against; empty
	// skips the check (with a warning).
	OperatorTimeURL string
	// MaxClockSkew is how far the node's clock may be from the operator's (default 50 ms).
	MaxClockSkew time.Duration
	// ClockOffset shifts the agent's clock, for tests of the clock check.
	ClockOffset time.Duration
	// Reboot reboots the node for a Reboot operation; nil: the agent cannot run one (the
	// operation fails, saying so).
	Reboot Rebooter
	// FailStepOnce makes the first run of these steps fail, for tests of failure handling; a step
	// listed twice fails twice (the change's run and its rollback's).
	FailStepOnce []v1alpha1.StepAction
	// drawTurn, when set, is the node's moment in a window its agent shares with the cluster's
	// (tests); otherwise drawn at random.
	drawTurn func(spread time.Duration) time.Duration
	// TunnelPortPath, when set (lab builds), may take the tunnel port step another way: the
	// benchmark compares the OVSDB client netshift uses with the exec of ovs-vsctl it replaced.
	TunnelPortPath nodenet.TunnelPortPath
	// NetworkPlugin names the cluster's network plugin, whose driver takes the node's steps
	// (default lab: see package plugins for the others).
	NetworkPlugin string
	// NewPlugin, when set, makes the node's driver in place of NetworkPlugin's (tests, and
	// simulated nodes, give one of their own); the plugin keeps NetworkPlugin's name.
	NewPlugin func(nodenet.Env) (netplugin.Node, error)
	// NetworkConfig is the node's network configuration file, which new pods are set up from; a
	// live change rewrites it as its last step. Empty: nothing on the node reads one.
	NetworkConfig string
	// BootIDFile holds the node's boot ID (default /proc/sys/kernel/random/boot_id): a restore
	// that reboots the node is told apart from an agent restart by it.
	BootIDFile string
	// PlugPorts plugs the ports of the pods on this node (needs OVSDB): see package plug.
	PlugPorts bool
	// PlugMode is the node's plug mode unless its Node annotation netshift.io/plug-mode says
	// otherwise (default per-port).
	PlugMode plug.Mode
	// IntegrationBridge is the bridge the network controller programs (default br-int).
	IntegrationBridge string
	// OVNRunDir is the node's OVN run directory (/var/run/ovn), where a zone's
	// databases of the node's own have their sockets.
	OVNRunDir string
	// Pods lists the node's pods (RuntimePods: from its container runtime); nil: the agent
	// knows no pods, and a pod MTU step fails saying so.
	Pods nodenet.NodePods
	// CNI, when its Plugin is set, installs netshift-cni on the node and keeps it chained.
	CNI CNIInstall
	// Host, when set, is the node the agent runs on in place of the real one (a simulated node
	// of a scale test, with NewPlugin its driver): its clock and step timer, links, UDP ports,
	// boot and network configuration. NodeNetns, ClockOffset, NetworkConfig and BootIDFile
	// are then unused.
	Host nodehost.Host
	// Logger, when set, is the agent's logger in place of controller-runtime's global one (the
	// many agents of a scale test log to a file of their own).
	Logger *logr.Logger
}

// networkPlugin is the plugin the options name, the lab's by default.
func networkPlugin(o Options) string {
	if o.NetworkPlugin == "" {
		return plugins.Default
	}
	return o.NetworkPlugin
}

// Rebooter reboots the node. It may end this process (the node goes down);
// when it returns, the node has come back.
type Rebooter func(ctx context.Context, node, operation string) error

// CommandRebooter runs a command as the reboot, with the node and the
// operation in its environment.
func CommandRebooter(command string) Rebooter {
	return func(ctx context.Context, node, operation string) error {
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Env = append(os.Environ(), "NETSHIFT_NODE="+node, "NETSHIFT_OPERATION="+operation)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("reboot command %q: %w: %s", command, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
}

// bootID reads the node's boot ID.
func (a *Agent) bootID() (string, error) {
	path := a.BootIDFile
	if path == "" {
		path = "/proc/sys/kernel/random/boot_id"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the boot ID: %w", err)
	}
	id := strings.TrimSpace(string(data))
	if id == "" {
		return "", fmt.Errorf("read the boot ID: %s is empty", path)
	}
	return id, nil
}

// checkNode verifies the agent can reach its node: the namespace exists and
// the OVSDB socket accepts a connection.
func checkNode(o Options) error {
	if o.NodeNetns != "" {
		if _, err := os.Stat(filepath.Join("/run/netns", o.NodeNetns)); err != nil {
			return fmt.Errorf("node %s: network namespace %s: %w", o.Node, o.NodeNetns, err)
		}
	}
	if o.OVSDB != "" {
		path, ok := strings.CutPrefix(o.OVSDB, "unix:")
		if !ok {
			return fmt.Errorf("node %s: --ovsdb %q: only unix:PATH sockets are supported", o.Node, o.OVSDB)
		}
		c, err := net.DialTimeout("unix", path, 2*time.Second)
		if err != nil {
			return fmt.Errorf("node %s: OVSDB %s: %w", o.Node, o.OVSDB, err)
		}
		c.Close()
	}
	return nil
}

// cniChained is the agent's readiness on a node whose pods it wires: a pod
// created before netshift-cni is chained misses netshift's MTU and port.
func cniChained(node string, chained *atomic.Bool) error {
	if !chained.Load() {
		return fmt.Errorf("node %s: netshift-cni is not chained into the node's CNI configuration yet", node)
	}
	return nil
}

// openSwitch connects to the node's OVSDB for as long as the agent runs (nil
// without one).
func openSwitch(mgr ctrl.Manager, o Options) (*ovs.Switch, error) {
	if o.OVSDB == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	sw, err := ovs.OpenSwitch(ctx, o.OVSDB)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", o.Node, err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { <-ctx.Done(); sw.Close(); return nil })); err != nil {
		return nil, err
	}
	return sw, nil
}

// addLogged adds r to the manager with the manager's logger in its context:
// controller-runtime starts a runnable with none, and the global logger is not
// the agent's where many agents share a process (the scale run). The wrapper
// hides what else r implements: a runnable that says whether it needs leader
// election, warms up or has a cache of its own must be added as it is.
func addLogged(mgr ctrl.Manager, r manager.Runnable) error {
	logger := mgr.GetLogger()
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return r.Start(log.IntoContext(ctx, logger)) }))
}

// managerOptions are the agent's manager's: a cache of its own node's
// NetshiftNodeState, Node and pods only.
func managerOptions(o Options) ctrl.Options {
	opts := ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: o.HealthAddr,
		Controller:             config.Controller{SkipNameValidation: ptr.To(o.ManyInProcess)},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.NetshiftNodeState{}:  {Field: fields.OneTermEqualSelector("metadata.name", o.Node)},
			&corev1.Pod{}:                  {Field: fields.OneTermEqualSelector("spec.nodeName", o.Node)},
			&corev1.Node{}:                 {Field: fields.OneTermEqualSelector("metadata.name", o.Node)},
			&v1alpha1.NetshiftChangePlan{}: {Field: fields.OneTermEqualSelector("metadata.name", v1alpha1.NetshiftChangePlanName)},
		}},
	}
	if o.Logger != nil {
		opts.Logger = *o.Logger
	}
	o.Shared.apply(&opts)
	return opts
}

// NewManager builds the agent process for one node: a manager whose cache
// holds only that node's NetshiftNodeState.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	node := o.Node
	if err := checkNode(o); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, managerOptions(o))
	if err != nil {
		return nil, fmt.Errorf("node %s: create agent manager: %w", node, err)
	}
	if o.HealthAddr != "0" && o.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("node", func(*http.Request) error { return checkNode(o) }); err != nil {
			return nil, err
		}
	}
	sw, err := openSwitch(mgr, o)
	if err != nil {
		return nil, err
	}
	a := &Agent{Client: mgr.GetClient(), Node: node, Work: o.Work, NodeNetns: o.NodeNetns, OVSDB: o.OVSDB, Switch: sw,
		UnderlayInterface: o.UnderlayInterface, OperatorTimeURL: o.OperatorTimeURL, MaxClockSkew: o.MaxClockSkew,
		now: func() time.Time { return time.Now().Add(o.ClockOffset) }, Reboot: o.Reboot, failSteps: map[v1alpha1.StepAction]int{},
		doneAt: map[string]time.Time{}, settled: map[string]bool{}, Pods: o.Pods, IntegrationBridge: o.IntegrationBridge,
		NetworkConfig: o.NetworkConfig, BootIDFile: o.BootIDFile, Host: o.Host, reader: mgr.GetAPIReader(), drawTurn: o.drawTurn}
	if o.Host != nil {
		a.now = o.Host.Now
	}
	for _, s := range o.FailStepOnce {
		a.failSteps[s]++
	}
	// Read before anything writes: an agent that restarts on a node netshift was taken off
	// must not put netshift-cni back before its first look at its NetshiftNodeState.
	a.gate = &offGate{off: offAtStart(mgr.GetAPIReader(), node)}
	a.Work = maps.Clone(o.Work)
	if a.Work == nil {
		a.Work = map[v1alpha1.OperationKind]Work{}
	}
	a.Work[v1alpha1.OperationReboot] = a.rebootNode
	if a.Pods == nil {
		a.Pods = nodenet.NoPods{}
	}
	a.PluginName = networkPlugin(o)
	env := nodenet.Env{Node: node, Netns: o.NodeNetns, Pods: a.Pods, Switch: sw,
		IntegrationBridge: o.IntegrationBridge, OVNRunDir: o.OVNRunDir, LockPods: a.lockPods, Now: a.now, TunnelPortPath: o.TunnelPortPath}
	if o.NewPlugin != nil {
		a.Plugin, err = o.NewPlugin(env)
	} else {
		a.Plugin, err = plugins.Node(a.PluginName, env)
	}
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	if a.MaxClockSkew == 0 {
		a.MaxClockSkew = 50 * time.Millisecond
	}
	toNode := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: node}}}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("agent").For(&v1alpha1.NetshiftNodeState{}).
		Watches(&v1alpha1.NetshiftChangePlan{}, toNode).Complete(a); err != nil {
		return nil, fmt.Errorf("node %s: set up agent: %w", node, err)
	}
	if o.PlugPorts {
		if err := addPortPlugger(mgr, o, sw); err != nil {
			return nil, err
		}
	}
	if o.CNI.Plugin != "" {
		install := o.CNI
		install.chained = new(atomic.Bool)
		install.gate = a.gate
		a.cni = &install
		if err := addLogged(mgr, install); err != nil {
			return nil, err
		}
		if o.HealthAddr != "0" && o.HealthAddr != "" {
			if err := mgr.AddReadyzCheck("cni", func(*http.Request) error { return cniChained(node, install.chained) }); err != nil {
				return nil, err
			}
		}
		if o.CNI.Pool != nil {
			if err := addPoolNamespaces(mgr, o.CNI.Pool.Namespaces, a.gate); err != nil {
				return nil, fmt.Errorf("node %s: %w", node, err)
			}
		}
	}
	if a.config() != nil && o.Pods != nil {
		if err := addLogged(mgr, podAligner{a}); err != nil {
			return nil, err
		}
	}
	if err := addLogged(mgr, networkObserver{a}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Reconcile takes the next step for the agent's own node.
func (a *Agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != a.Node {
		return ctrl.Result{}, nil
	}
	if a.startedAt.IsZero() {
		a.startedAt = a.now() // the first pass runs once the caches have synced
	}
	var nns v1alpha1.NetshiftNodeState
	if err := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &nns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if nns.Spec.Uninstall {
		return a.uninstall(ctx, &nns)
	}
	if a.gate.putBack() || nns.Status.Uninstall != nil {
		// The uninstall was withdrawn: the agent puts netshift back (netshift-cni at its next look).
		log.FromContext(ctx).Info("netshift is back on the node: spec.uninstall was withdrawn", "node", a.Node)
		if err := a.report(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) { s.Uninstall = nil }); err != nil {
			return ctrl.Result{}, err
		}
	}
	// A live change moves every node at once and goes before any drained operation.
	plan, err := a.planOf(ctx, &nns)
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan != nil {
		return a.liveChange(ctx, &nns, plan)
	}
	a.reported.noPlan()
	step, opID := NextStep(&nns)
	logger := log.FromContext(ctx).WithValues("node", a.Node, "operation", opID, "step", step)
	now := metav1.Now()
	switch step {
	case StepNone:
		return ctrl.Result{}, nil
	case StepRelease:
		logger.Info("handing the slot back")
		return ctrl.Result{}, a.report(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.DrainRequest = &v1alpha1.DrainRequest{Operation: opID, State: v1alpha1.DrainRequestIdle, Time: &now}
		})
	case StepRequestDrain:
		logger.Info("asking for a drain")
		return ctrl.Result{}, a.report(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.DrainRequest = &v1alpha1.DrainRequest{Operation: opID, State: v1alpha1.DrainRequestRequired, Time: &now}
			s.SyncOperation, s.SyncStatus, s.LastSyncError = opID, v1alpha1.SyncInProgress, ""
			s.RebootFromBoot = "" // an earlier operation's reboot is not this one's
		})
	case StepDrainFailed:
		reason := nns.Status.DrainFailure.Reason
		logger.Info("drain given up by the operator", "reason", reason)
		return ctrl.Result{}, a.report(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.SyncOperation, s.SyncStatus = opID, v1alpha1.SyncFailed
			s.LastSyncError = fmt.Sprintf("node %s: operation %s: drain failed: %s", a.Node, opID, reason)
			s.DrainRequest = &v1alpha1.DrainRequest{Operation: opID, State: v1alpha1.DrainRequestIdle, Time: &now}
		})
	case StepWork:
		op := *nns.Spec.Operation
		work, ok := a.Work[op.Kind]
		var err error
		if !ok {
			err = fmt.Errorf("this agent cannot run operations of kind %q", op.Kind)
		} else {
			logger.Info("working")
			err = work(ctx, a.Node, op)
		}
		if ctx.Err() != nil {
			return ctrl.Result{}, ctx.Err() // stopped mid-work: the next agent runs it again
		}
		// Re-read: the work may have taken long and the operator may have written meanwhile.
		if gerr := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &nns); gerr != nil {
			return ctrl.Result{}, gerr
		}
		done := metav1.Now()
		return ctrl.Result{}, a.report(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) {
			s.SyncOperation, s.SyncStatus, s.LastSyncError = opID, v1alpha1.SyncSucceeded, ""
			if err != nil {
				s.SyncStatus, s.LastSyncError = v1alpha1.SyncFailed, fmt.Sprintf("node %s: operation %s (%s): %v", a.Node, opID, op.Kind, err)
				logger.Error(err, "work failed")
			}
			s.DrainRequest = &v1alpha1.DrainRequest{Operation: opID, State: v1alpha1.DrainRequestIdle, Time: &done}
		})
	}
	return ctrl.Result{}, fmt.Errorf("unknown agent step %q", step)
}

// report writes the agent's own status fields, guarded by the resourceVersion
// it read, so it never overwrites a decision it has not seen.
func (a *Agent) report(ctx context.Context, nns *v1alpha1.NetshiftNodeState, mutate func(*v1alpha1.NetshiftNodeStateStatus)) error {
	patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	mutate(&nns.Status)
	if err := a.Client.Status().Patch(ctx, nns, patch); err != nil {
		return fmt.Errorf("node %s: report status: %w", a.Node, err)
	}
	return nil
}

// reportDone writes what the agent has done, which no decision of the
// operator's changes: on a conflict (the operator wrote the object
// meanwhile) it is laid again on the object as it is now.
func (a *Agent) reportDone(ctx context.Context, nns *v1alpha1.NetshiftNodeState, mutate func(*v1alpha1.NetshiftNodeStateStatus)) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			// Past the cache: on a busy API server the cache lags by seconds, and a conflict
			// read from it would conflict again.
			reader := a.reader
			if reader == nil {
				reader = a.Client
			}
			if err := reader.Get(ctx, client.ObjectKeyFromObject(nns), nns); err != nil {
				return err
			}
		}
		first = false
		patch := client.MergeFromWithOptions(nns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		mutate(&nns.Status)
		return a.Client.Status().Patch(ctx, nns, patch)
	})
	if err != nil {
		return fmt.Errorf("node %s: report status: %w", a.Node, err)
	}
	return nil
}
