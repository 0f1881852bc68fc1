package main

import (
	"strings"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/netplugin/plugins"
	"netshift.io/netshift/internal/operator"
)

func operatorCmd(g *globals) *cobra.Command {
	o := operator.DefaultOptions()
	var pools portPoolFlags
	nb := ovnDBFlags{flag: "ovn-nb", db: "northbound"}
	sb := ovnDBFlags{flag: "ovn-sb", db: "southbound"}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: the drain controller and every netshift controller (leader-elected)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return asUsage(err)
			}
			var err error
			if o.OVNNorthbound, o.OVNNorthboundTLS, err = nb.options(); err != nil {
				return asUsage(err)
			}
			if o.OVNSouthbound, o.OVNSouthboundTLS, err = sb.options(); err != nil {
				return asUsage(err)
			}
			if pools.enabled {
				pp, err := pools.options()
				if err != nil {
					return asUsage(err)
				}
				o.PortPools = &pp
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			mgr, err := operator.NewManager(cmd.Context(), cfg, o)
			if err != nil {
				return err
			}
			return mgr.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.ZoneMigration, "zone-migration", false, "move the cluster between OVN interconnect layouts as the ConfigMap ovn-interconnect-configuration says (without it the layout is only reported in NetshiftNetwork status.zones)")
	f.StringVar(&o.ZoneConfigNamespace, "zone-config-namespace", operator.Namespace, "namespace of the ConfigMap ovn-interconnect-configuration")
	f.StringVar(&o.NetworkPlugin, "network-plugin", o.NetworkPlugin, "the cluster's network plugin, whose driver says which steps a change has and which of the plugin's objects hold its settings ("+strings.Join(plugins.Names, ", ")+")")
	f.StringVar(&o.ZonePluginNamespace, "zone-plugin-namespace", o.ZonePluginNamespace, "namespace of the network plugin's node DaemonSet and central Deployment (a zone move restarts the node's plugin pod; the central side is scaled); empty: the plugin driver's")
	f.StringVar(&o.ZonePluginPods, "zone-plugin-pods", o.ZonePluginPods, "label selector of the network plugin's per-node pods: the pod a node's move deletes, whose successor joins the zone of the node's k8s.ovn.org/zone-name label and annotates the node; empty: the plugin driver's")
	f.StringVar(&o.ZoneCentral, "zone-central-deployment", o.ZoneCentral, "name of the Deployment running the central NB/SB databases and ovn-northd: scaled up before nodes join the central zone, to 0 once none is left in it; empty: the plugin driver's")
	f.Int32Var(&o.ZoneCentralReplicas, "zone-central-replicas", o.ZoneCentralReplicas, "replicas of the central Deployment when it runs (1..9)")
	f.DurationVar(&o.ZoneMoveTimeout, "zone-move-timeout", o.ZoneMoveTimeout, "how long a restarted plugin pod may take to annotate its node before the move is reported held in status.zones.held (10s..1h; a crash-looping pod is reported at once)")
	f.DurationVar(&o.ZoneMoveSettle, "zone-move-settle", o.ZoneMoveSettle, "how long after a node's move ends no other node starts one and the central side is left alone, while the plugin's other nodes take the move in (0..10m; 0: no wait)")
	f.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "elect one leader among operator replicas; only the leader decides")
	f.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "namespace of the leader election Lease")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus metrics endpoint (\"0\" disables it)")
	f.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of /healthz and /readyz (\"0\" disables it)")
	f.DurationVar(&o.EvictionRetry, "eviction-retry", o.EvictionRetry, "how often blocked evictions are retried")
	f.StringVar(&o.TimeAddr, "time-bind-address", o.TimeAddr, "address of the leader's /time endpoint, which agents check their clocks against (\"0\" disables it)")
	f.StringVar(&o.TimeAdvertiseURL, "time-advertise-url", "", "the URL at which agents reach this operator's /time endpoint (e.g. http://$(POD_IP):8082/time with the operator on the node's network); it goes into the live change's plan, so every agent checks its clock against the elected operator's")
	f.DurationVar(&o.ChangeLead, "change-lead", o.ChangeLead, "the least T0 of a live change is set ahead of its write: the operator sets it twice what the plan took to reach the slowest 1 % of agents (as they report it), at least this and at most 30 s or this (until half the nodes measured, at least this plus 1 ms a node); a rollback's adds twice what writing its nodes' own plans took")
	f.DurationVar(&o.StepSpacing, "step-spacing", o.StepSpacing, "time between a node's steps in a live change")
	f.DurationVar(&o.AgentWriteSpacing, "agent-write-spacing", o.AgentWriteSpacing, "the time a node over which a live change's agents spread their answers to its plan, and again their steps' reports, at most a minute in all: together they send the API server about 1/this writes a second (6ms: 167); a control plane that serves more may take less (1ms..100ms)")
	f.StringVar(&o.AgentDaemonSet, "agent-daemonset", o.AgentDaemonSet, "the agent's DaemonSet as namespace/name: a live change is only for the Linux nodes its pods are placed on (node selector, affinity, taints); empty, or not found, every Linux node")
	f.DurationVar(&o.AnswerTimeout, "answer-timeout", o.AnswerTimeout, "how long a live change waits for a silent agent, from the plan or T0, or from the last answer of another node when later: before T0 it is cancelled with nothing touched, after T0 it fails naming the node")
	f.DurationVar(&o.SouthboundResync, "southbound-resync", o.SouthboundResync, "with --ovn-sb and Geneve: how often the Encap records are checked to carry the applied port (a chassis that registers again comes without it)")
	nb.register(f, "OVN northbound database: the logical switch ports of plugged pods get requested-chassis (source and target while a VM migrates, with activation-strategy=rarp)")
	sb.register(f, "OVN southbound database: a Geneve port change goes into its Encap records at T0")
	f.DurationVar(&o.ChangeRetry, "change-retry", o.ChangeRetry, "how long after failed preconditions a live change is tried again")
	f.DurationVar(&o.AdmissionSettle, "admission-settle", o.AdmissionSettle,
		"how long a pool waits after its latest drain request before granting slots, so a change's requests are granted in name order")
	pools.register(f)
	return cmd
}
