package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
	// TimeAddr serves the leader's clock at /time for the agents' clock check; "0" disables it.
	TimeAddr string
	// TimeAdvertiseURL is the URL at which agents reach this operator's /time endpoint when it
	// leads; it goes into each node's live-change plan. Empty: agents use their own
	// --operator-time-url, or skip the clock check with a warning.
	TimeAdvertiseURL string
	// TimeBound, when set, receives the time endpoint's bound address.
	TimeBound chan<- string
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
	ZonePluginNamespace string
	ZonePluginPods      string
	ZoneCentral         string
	ZoneCentralReplicas int32
	// ZoneMoveTimeout is how long a restarted plugin pod may take to annotate its node before its
	// move is reported held in status.zones.held.
	ZoneMoveTimeout time.Duration
	// PortPools, when set, runs the Neutron port pools: the pool manager, its API and the pod
	// controller (leader only).
	PortPools *PortPoolOptions
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

func (o Options) zonePluginNamespace() string {
	if o.ZonePluginNamespace == "" {
		return "ovn-kubernetes"
	}
	return o.ZonePluginNamespace
}

// DefaultOptions are the operator's defaults.
func DefaultOptions() Options {
	return Options{
		MetricsAddr: ":8080", HealthAddr: ":8081",
		LeaderElection: true, LeaderElectionID: "netshift-operator", LeaderElectionNS: Namespace,
		EvictionRetry: 5 * time.Second, AdmissionSettle: rollout.DefaultSettle,
		ChangeLead: 2 * time.Second, StepSpacing: 100 * time.Millisecond, TimeAddr: ":8082",
		AnswerTimeout: 30 * time.Second, SouthboundResync: 30 * time.Second, ChangeRetry: 15 * time.Second,
		ZonePluginNamespace: "ovn-kubernetes", ZonePluginPods: "app=ovnkube-node", ZoneCentral: "ovnkube-central",
		ZoneCentralReplicas: 1, ZoneMoveTimeout: 5 * time.Minute,
	}
}

// NewManager builds the operator: a controller-runtime manager with leader
// election, health probes, metrics, and every netshift controller.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.HealthAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(o.ManyInProcess)},
		// The zone controller reads one ConfigMap, and may read no other: cache
		// that one, watched by name; and the network plugin's central
		// Deployment, by name in the plugin's namespace, as its Role allows.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.zoneNamespace(): {
				FieldSelector: fields.OneTermEqualSelector("metadata.name", zones.ConfigMapName)}}},
			&appsv1.Deployment{}: {Namespaces: map[string]cache.Config{o.zonePluginNamespace(): {
				FieldSelector: fields.OneTermEqualSelector("metadata.name", o.ZoneCentral)}}},
		}},
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
	var reg prometheus.Registerer = crmetrics.Registry
	if o.Registry != nil {
		reg = o.Registry
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
	lc := &LiveChangeReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Now: time.Now, Ledger: ledger,
		Lead: o.ChangeLead, Spacing: o.StepSpacing, RetryAfter: o.ChangeRetry, TimeURL: o.TimeAdvertiseURL}
	if o.OVNSouthbound != "" {
		lc.OVNSouthbound = &ovs.Southbound{DB: o.OVNSouthbound, TLS: o.OVNSouthboundTLS}
		if err := mgr.Add(closeAtStop(lc.OVNSouthbound.Close)); err != nil {
			return nil, err
		}
	}
	if lc.RetryAfter == 0 {
		lc.RetryAfter = 15 * time.Second
	}
	lc.AnswerTimeout = o.AnswerTimeout
	lc.SouthboundResync = o.SouthboundResync
	if lc.SouthboundResync == 0 {
		lc.SouthboundResync = 30 * time.Second
	}
	if lc.AnswerTimeout == 0 {
		lc.AnswerTimeout = 30 * time.Second
	}
	if lc.Lead == 0 {
		lc.Lead = 2 * time.Second
	}
	if lc.Spacing == 0 {
		lc.Spacing = 100 * time.Millisecond
	}
	if err := lc.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up live change controller: %w", err)
	}
	dr := &DrainReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Ledger: ledger,
		Recorder: mgr.GetEventRecorder("netshift-drain"), Metrics: NewDrainMetrics(reg),
		Now: time.Now, RetryInterval: o.EvictionRetry, Settle: o.AdmissionSettle,
	}
	if err := dr.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("set up drain controller: %w", err)
	}
	pluginPods, err := labels.Parse(o.ZonePluginPods)
	if err != nil {
		return nil, fmt.Errorf("--zone-plugin-pods: %q is not a label selector: %w", o.ZonePluginPods, err)
	}
	zonePasses := prometheus.NewCounter(prometheus.CounterOpts{Name: "netshift_zone_passes_total",
		Help: "Zone controller passes completed: each read the nodes, the pools and the ConfigMap and decided the next moves."})
	if err := reg.Register(zonePasses); err != nil {
		return nil, err
	}
	zr := &ZoneReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.zoneNamespace(), Enabled: o.ZoneMigration, Now: time.Now,
		Plugin: ZonePlugin{Namespace: o.zonePluginNamespace(), NodePods: pluginPods, Central: o.ZoneCentral, Replicas: o.ZoneCentralReplicas,
			MoveTimeout: o.ZoneMoveTimeout},
		Passes: zonePasses, Ledger: ledger}
	if err := zr.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up zone controller: %w", err)
	}
	if o.OVNNorthbound != "" {
		nb := &ovs.Northbound{DB: o.OVNNorthbound, TLS: o.OVNNorthboundTLS}
		if err := mgr.Add(closeAtStop(nb.Close)); err != nil {
			return nil, err
		}
		pc := &PortChassisReconciler{Client: mgr.GetClient(), Northbound: nb, Recorder: mgr.GetEventRecorder("netshift-ports")}
		if lc.OVNSouthbound != nil {
			pc.Southbound = lc.OVNSouthbound // a migration's source lets go of its port before the target takes it alone
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

// closeAtStop closes a connection of the operator's when it stops.
func closeAtStop(close func()) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close()
		return nil
	})
}
