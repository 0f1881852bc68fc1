package operator

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/plugins"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/rollout"
	"netshift.io/netshift/internal/scheme"
	"netshift.io/netshift/internal/zones"
)

// Namespace is where netshift's own workloads, leases and config live.
const Namespace = "netshift-system"

// Scheme knows the Kubernetes built-in types and netshift's.
func Scheme() *runtime.Scheme { return scheme.New() }

// Options configure the operator process.
type Options struct {
	MetricsAddr      string // "0" disables the metrics endpoint
	HealthAddr       string // "0" disables the health endpoint
	LeaderElection   bool
	LeaderElectionID string
	LeaderElectionNS string
	EvictionRetry    time.Duration
	// AdmissionSettle is how long a pool waits after its latest drain request before granting slots.
	AdmissionSettle time.Duration
	// ManyInProcess allows several operators in one process (tests): controller names may repeat.
	ManyInProcess bool
	// ChangeLead is how far ahead T0 of a live change is set.
	ChangeLead time.Duration
	// StepSpacing is the time between a node's steps in a live change.
	StepSpacing time.Duration
	// AgentWriteSpacing is the time a node over which a live change's agents spread their answers
	// to its plan, and again their steps' reports.
	AgentWriteSpacing time.Duration
	// TimeAddr serves the leader's clock at /time for the agents' clock check; "0" disables it.
	TimeAddr string
	// TimeAdvertiseURL is the URL at which agents reach this operator's /time endpoint when it
	// leads; it goes into each node's live-change plan. Empty: agents use their own
	// --operator-time-url, or skip the clock check with a warning.
	TimeAdvertiseURL string
	// TimeBound, when set, receives the time endpoint's bound address.
	TimeBound chan<- string
	// NetworkPlugin names the cluster's network plugin, whose driver says what a change
	// touches (default lab: see package plugins for the others).
	NetworkPlugin string
	// OVNSouthbound is the OVN southbound database (OVN clusters), for Geneve port changes.
	OVNSouthbound string
	// OVNNorthbound is the OVN northbound database: with it, the logical switch ports of plugged
	// pods are bound to their chassis, both source and target while a VM migrates.
	OVNNorthbound string
	// OVNNorthboundTLS and OVNSouthboundTLS are what ssl: endpoints are reached with.
	OVNNorthboundTLS, OVNSouthboundTLS *ovs.TLS
	// ZoneMigration lets the zone controller move the cluster between OVN interconnect layouts;
	// without it the layout is only reported.
	ZoneMigration bool
	// ZoneConfigNamespace holds the ConfigMap ovn-interconnect-configuration (default netshift-system).
	ZoneConfigNamespace string
	// ZonePluginNamespace, ZonePluginPods, ZoneCentral and ZoneCentralReplicas name the network
	// plugin's objects a zone move acts on: its namespace, the label selector of its per-node
	// DaemonSet pods, and the Deployment of its central side with the replicas it runs when started.
	// Empty: the plugin driver's.
	ZonePluginNamespace string
	ZonePluginPods      string
	ZoneCentral         string
	ZoneCentralReplicas int32
	// ZoneMoveTimeout is how long a restarted plugin pod may take to annotate its node before its
	// move is reported held in status.zones.held.
	ZoneMoveTimeout time.Duration
	// ZoneMoveSettle is how long after a node's move no other starts (the plugin's nodes take it in).
	ZoneMoveSettle time.Duration
	// PortPools, when set, runs the Neutron port pools: the pool manager, its API and the pod
	// controller (leader only).
	PortPools *PortPoolOptions
	// AgentDaemonSet is the agent's DaemonSet, as namespace/name: a live change is only for the
	// Linux nodes its pods are placed on. Empty, or not found: every Linux node.
	AgentDaemonSet string
	// AnswerTimeout is how long a live change waits for a silent agent, before T0 (then it is
	// cancelled, nothing touched) and after it (then it fails naming the node).
	AnswerTimeout time.Duration
	// SouthboundResync is how often, with OVN and Geneve and no change in progress, the Encap
	// records are checked to carry the applied port (default 30 s).
	SouthboundResync time.Duration
	// ChangeRetry is how long after failed preconditions a live change is tried again.
	ChangeRetry time.Duration
	// Registry receives the operator's metrics; nil means controller-runtime's, served on MetricsAddr.
	Registry prometheus.Registerer
}

func (o Options) zoneNamespace() string {
	if o.ZoneConfigNamespace == "" {
		return Namespace
	}
	return o.ZoneConfigNamespace
}

// zoneObjects are the plugin objects a zone move acts on: the driver's, each
// replaced by its flag when set; nil when the plugin has no zones.
func (o Options) zoneObjects(plugin netplugin.Cluster) *netplugin.Zones {
	z := plugin.Zones()
	if z == nil {
		return nil
	}
	objects := *z
	if o.ZonePluginNamespace != "" {
		objects.Namespace = o.ZonePluginNamespace
	}
	if o.ZonePluginPods != "" {
		objects.NodePods = o.ZonePluginPods
	}
	if o.ZoneCentral != "" {
		objects.Central = o.ZoneCentral
	}
	return &objects
}

// agentDaemonSet is --agent-daemonset as a key (empty: none).
func (o Options) agentDaemonSet() types.NamespacedName {
	ns, name, ok := strings.Cut(o.AgentDaemonSet, "/")
	if !ok {
		return types.NamespacedName{}
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}

// DefaultOptions are the operator's defaults.
func DefaultOptions() Options {
	return Options{
		MetricsAddr: ":8080", HealthAddr: ":8081",
		LeaderElection: true, LeaderElectionID: "netshift-operator", LeaderElectionNS: Namespace,
		EvictionRetry: 5 * time.Second, AdmissionSettle: rollout.DefaultSettle,
		ChangeLead: 2 * time.Second, StepSpacing: 100 * time.Millisecond, TimeAddr: ":8082",
		AgentWriteSpacing: livechange.DefaultAgentWriteSpacing, AnswerTimeout: 30 * time.Second,
		SouthboundResync: 30 * time.Second, ChangeRetry: 15 * time.Second,
		NetworkPlugin: plugins.Default, ZoneCentralReplicas: 1, ZoneMoveTimeout: 5 * time.Minute, ZoneMoveSettle: 5 * time.Second,
		AgentDaemonSet: Namespace + "/netshift-agent",
	}
}

// NewManager builds the operator: a controller-runtime manager with leader
// election, health probes, metrics, and every netshift controller.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	var sb *ovs.Southbound
	if o.OVNSouthbound != "" {
		sb = &ovs.Southbound{DB: o.OVNSouthbound, TLS: o.OVNSouthboundTLS}
	}
	plugin, zoneObjects, err := o.networkPlugin(sb)
	if err != nil {
		return nil, err
	}
	var reg prometheus.Registerer = crmetrics.Registry
	if o.Registry != nil {
		reg = o.Registry
	}
	cfg = countRequests(cfg, reg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.HealthAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(o.ManyInProcess)},
		Cache:                         cache.Options{ByObject: o.cached(zoneObjects)},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if o.HealthAddr != "0" {
		if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return nil, err
		}
	}
	if err := (&NodeStateReconciler{Client: mgr.GetClient(), Clock: metav1.Now}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up nodestate controller: %w", err)
	}
	if o.TimeAddr != "" && o.TimeAddr != "0" {
		if err := mgr.Add(&TimeServer{Addr: o.TimeAddr, Now: time.Now, Bound: o.TimeBound}); err != nil {
			return nil, err
		}
	}
	// One ledger: every hold of a node (a drain's, a zone move's, a live change's) is taken and
	// given back one at a time, and a drain's slot and a zone move's are counted together.
	ledger := &Ledger{}
	if sb != nil {
		if err := mgr.Add(closeAtStop(sb.Close)); err != nil {
			return nil, err
		}
	}
	// Made again with the manager's clients, which the cache's limits above needed it before.
	if plugin, err = plugins.Cluster(plugin.Name(), plugins.ClusterEnv{Southbound: sb, Reader: mgr.GetAPIReader(), Client: mgr.GetClient(), Now: time.Now}); err != nil {
		return nil, err
	}
	if err := setupLiveChange(mgr, o, plugin, ledger); err != nil {
		return nil, err
	}
	dr := &DrainReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Ledger: ledger,
		Recorder: mgr.GetEventRecorder("netshift-drain"), Metrics: NewDrainMetrics(reg),
		Now: time.Now, RetryInterval: o.EvictionRetry, Settle: o.AdmissionSettle,
	}
	if err := dr.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("set up drain controller: %w", err)
	}
	if zoneObjects = o.zoneObjects(plugin); zoneObjects != nil {
		if err := setupZones(mgr, o, *zoneObjects, ledger, reg); err != nil {
			return nil, err
		}
	}
	if o.OVNNorthbound != "" {
		nb := &ovs.Northbound{DB: o.OVNNorthbound, TLS: o.OVNNorthboundTLS}
		if err := mgr.Add(closeAtStop(nb.Close)); err != nil {
			return nil, err
		}
		pc := &PortChassisReconciler{Client: mgr.GetClient(), Northbound: nb, Recorder: mgr.GetEventRecorder("netshift-ports")}
		if sb != nil {
			pc.Southbound = sb // a migration's source lets go of its port before the target takes it alone
		}
		if err := pc.SetupWithManager(ctx, mgr); err != nil {
			return nil, fmt.Errorf("set up port chassis controller: %w", err)
		}
	}
	if o.PortPools != nil {
		if err := setupPortPools(ctx, mgr, *o.PortPools); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// networkPlugin is the cluster driver of the plugin the options name, and
// the plugin objects a zone move acts on (nil when it has no zones).
func (o Options) networkPlugin(sb *ovs.Southbound) (netplugin.Cluster, *netplugin.Zones, error) {
	name := o.NetworkPlugin
	if name == "" {
		name = plugins.Default
	}
	plugin, err := plugins.Cluster(name, plugins.ClusterEnv{Southbound: sb})
	if err != nil {
		return nil, nil, err
	}
	zoneObjects := o.zoneObjects(plugin)
	if zoneObjects == nil && o.ZoneMigration {
		return nil, nil, fmt.Errorf("--zone-migration: the network plugin %s has no zones to move between", name)
	}
	return plugin, zoneObjects, nil
}

// cached limits the cache to what the operator may read. The zone controller
// reads one ConfigMap, and may read no other: cache that one, watched by
// name; and the network plugin's central Deployment, by name in the plugin's
// namespace, as its Role allows.
func (o Options) cached(zoneObjects *netplugin.Zones) map[client.Object]cache.ByObject {
	byObject := map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.zoneNamespace(): {
			FieldSelector: fields.OneTermEqualSelector("metadata.name", zones.ConfigMapName)}}},
	}
	if zoneObjects != nil {
		byObject[&appsv1.Deployment{}] = cache.ByObject{Namespaces: map[string]cache.Config{zoneObjects.Namespace: {
			FieldSelector: fields.OneTermEqualSelector("metadata.name", zoneObjects.Central)}}}
	}
	return byObject
}

// setupLiveChange adds the live change controller, zero options taking their defaults.
func setupLiveChange(mgr ctrl.Manager, o Options, plugin netplugin.Cluster, ledger *Ledger) error {
	lc := &LiveChangeReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Now: time.Now, Ledger: ledger,
		Lead: cmp.Or(o.ChangeLead, 2*time.Second), Spacing: cmp.Or(o.StepSpacing, 100*time.Millisecond), AgentWriteSpacing: o.AgentWriteSpacing,
		RetryAfter: cmp.Or(o.ChangeRetry, 15*time.Second), AnswerTimeout: cmp.Or(o.AnswerTimeout, 30*time.Second),
		SouthboundResync: cmp.Or(o.SouthboundResync, 30*time.Second), TimeURL: o.TimeAdvertiseURL, Plugin: plugin,
		Placement: &AgentPlacement{Reader: mgr.GetAPIReader(), DaemonSet: o.agentDaemonSet()}}
	if err := lc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up live change controller: %w", err)
	}
	return nil
}

// setupZones adds the zone controller, which moves nodes between OVN
// interconnect layouts through the plugin's objects.
func setupZones(mgr ctrl.Manager, o Options, objects netplugin.Zones, ledger *Ledger, reg prometheus.Registerer) error {
	pluginPods, err := labels.Parse(objects.NodePods)
	if err != nil {
		return fmt.Errorf("--zone-plugin-pods: %q is not a label selector: %w", objects.NodePods, err)
	}
	zonePasses := prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_zone_passes_total",
		Help: "Zone controller passes completed: each read the nodes, the pools and the ConfigMap and decided the next moves."})
	if err := reg.Register(zonePasses); err != nil {
		return err
	}
	zr := &ZoneReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.zoneNamespace(), Enabled: o.ZoneMigration, Now: time.Now,
		Plugin: ZonePlugin{Namespace: objects.Namespace, NodePods: pluginPods, Central: objects.Central, Replicas: o.ZoneCentralReplicas, Interconnect: objects.Interconnect,
			MoveTimeout: o.ZoneMoveTimeout, Settle: o.ZoneMoveSettle, LeftCentral: objects.LeftCentral},
		Passes: zonePasses, Ledger: ledger}
	if err := zr.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up zone controller: %w", err)
	}
	return nil
}

// closeAtStop closes a connection of the operator's when it stops.
func closeAtStop(close func()) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close()
		return nil
	})
}
