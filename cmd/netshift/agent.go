package main

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/netplugin/plugins"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/plug"
)

func agentCmd(g *globals) *cobra.Command {
	var node, health, netns, ovsdb, underlay, timeURL string
	var maxSkew time.Duration
	var rebootCommand, networkConfig, bootIDFile, criEndpoint, networkPlugin string
	var cniInstall agent.CNIInstall
	var hold time.Duration
	var labHooks func(*agent.Options, *rest.Config) error
	var plugPorts bool
	var plugMode, integration, ovnRunDir string
	var cniPools bool
	var trunkBridge string
	var parkedDevices int
	var parkedTTL time.Duration
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent for one node (one per node, host network)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node == "" {
				return usagef("--node: required (the name of the Node this agent runs on)")
			}
			if hold < 0 {
				return usagef("--reconfigure-hold: must be 0 or more")
			}
			if trunkBridge != "" && !cniPools {
				return usagef("--cni-trunk-bridge: goes with --cni-port-pools (the bridge netshift-cni plugs pooled trunk subports on)")
			}
			for _, name := range []string{"cni-parked-devices", "cni-parked-ttl"} {
				if cmd.Flags().Changed(name) && !cniPools {
					return usagef("--%s: goes with --cni-port-pools (netshift-cni parks the devices of pooled pods)", name)
				}
			}
			if parkedDevices < 0 || parkedDevices > cni.MaxParkedDevices {
				return usagef("--cni-parked-devices %d: want 0 (none kept) to %d", parkedDevices, cni.MaxParkedDevices)
			}
			if parkedTTL < time.Second || parkedTTL > 24*time.Hour {
				return usagef("--cni-parked-ttl %s: want 1s to 24h", parkedTTL)
			}
			if err := plugins.Check(networkPlugin); err != nil {
				return asUsage(err)
			}
			mode, err := plug.ParseMode("--plug-mode", plugMode)
			if err != nil {
				return asUsage(err)
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			var reboot agent.Rebooter
			if rebootCommand != "" {
				reboot = agent.CommandRebooter(rebootCommand)
			}
			o := agent.Options{Node: node, HealthAddr: health, NodeNetns: netns, OVSDB: ovsdb, UnderlayInterface: underlay,
				OperatorTimeURL: timeURL, MaxClockSkew: maxSkew, Reboot: reboot,
				NetworkConfig: networkConfig, BootIDFile: bootIDFile, NetworkPlugin: networkPlugin,
				PlugPorts: plugPorts && ovsdb != "", PlugMode: mode, IntegrationBridge: integration, OVNRunDir: ovnRunDir,
				Work: map[v1alpha1.OperationKind]agent.Work{v1alpha1.OperationReconfigure: agent.HoldWork(hold)}}
			o.CNI = cniInstall
			o.CNI.NetworkConfig = networkConfig
			if o.CNI.Plugin != "" && networkConfig == "" {
				return usagef("--cni-plugin: needs --network-config, the file the plugin reads the node's MTU from")
			}
			if cniPools {
				if o.CNI.Plugin == "" || ovsdb == "" || o.CNI.NodeKubeconfig == "" {
					return usagef("--cni-port-pools: needs --cni-plugin, --ovsdb and --cni-node-kubeconfig")
				}
				// Beside the node's network configuration, where the agent's DaemonSet mounts the node's /var/lib/netshift.
				state := filepath.Dir(networkConfig)
				o.CNI.Pool = &cni.PoolConfig{Node: node, Kubeconfig: filepath.Join(o.CNI.ConfDir, "netshift-cni", "kubeconfig"),
					Namespaces: filepath.Join(state, "pool-namespaces.json"), StateDir: filepath.Join(state, "cni"),
					OVSDB: ovsdb, Bridge: integration, PlugMode: string(mode), TrunkBridge: trunkBridge, ParkedDevices: parkedDevices}
				o.CNI.ParkedTTL = parkedTTL
			}
			if criEndpoint != "" {
				o.Pods = &nodenet.RuntimePods{Endpoint: criEndpoint}
			}
			if err := labHooks(&o, cfg); err != nil {
				return err
			}
			mgr, err := agent.NewManager(cfg, o)
			if err != nil {
				return err
			}
			return mgr.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "name of this agent's Node (required)")
	f.StringVar(&health, "health-probe-bind-address", "0", "address of /healthz and /readyz (\"0\" disables it)")
	f.StringVar(&netns, "node-netns", "", "the node's network namespace, when the node is one (the lab); checked at start")
	f.StringVar(&ovsdb, "ovsdb", "", "the node's OVSDB socket, unix:PATH; checked at start and by /readyz")
	f.StringVar(&underlay, "underlay-interface", "", "the node's interface onto the underlay: a new pod MTU plus the tunnel overhead must fit under its MTU (empty: the interface holding the node's ovn-encap-ip in its OVS, else its InternalIP)")
	f.StringVar(&timeURL, "operator-time-url", "", "the operator's /time endpoint; before a live change the agent checks its clock against it")
	f.DurationVar(&maxSkew, "max-clock-skew", 50*time.Millisecond, "how far this node's clock may be from the operator's for a live change")
	f.StringVar(&rebootCommand, "reboot-command", "", "how a Reboot operation reboots the node once the drain controller drained it, run with sh -c "+
		"(\"nsenter -t 1 -m -- systemctl reboot\" with hostPID); the agent checks the node when it is back (empty: the agent runs no Reboot operation)")
	f.StringVar(&networkConfig, "network-config", "", "the node's network configuration file, which new pods are set up from; a live change rewrites it as its last step (empty: none)")
	f.StringVar(&bootIDFile, "boot-id-file", "/proc/sys/kernel/random/boot_id", "where the node's boot ID is read: a reboot is told apart from an agent restart by it")
	f.BoolVar(&plugPorts, "plug-ports", true, "plug the ports of this node's pods that carry netshift.io/port (the port pools') or netshift.io/port-spec (in namespaces a cluster admin opted in, for ports they own) (needs --ovsdb)")
	f.StringVar(&plugMode, "plug-mode", string(plug.PerPort), "how ports are plugged unless the Node's netshift.io/plug-mode annotation says otherwise: per-port or direct")
	f.StringVar(&integration, "integration-bridge", "br-int", "the integration bridge the network controller programs")
	f.StringVar(&ovnRunDir, "ovn-rundir", "/run/ovn", "where the agent sees the node's OVN run directory (/var/run/ovn on the node): with OVN-Kubernetes in a zone of the node's own, "+
		"a Geneve port change sets the Encap rows of the southbound database whose socket is there")
	f.DurationVar(&hold, "reconfigure-hold", 0, "how long a Reconfigure operation keeps the node before handing it back")
	f.StringVar(&networkPlugin, "network-plugin", plugins.Default, "the cluster's network plugin, whose driver takes the node's steps of a live change ("+strings.Join(plugins.Names, ", ")+")")
	f.StringVar(&criEndpoint, "cri-endpoint", cri.DefaultEndpoint, "the node's container runtime (CRI socket): where the agent finds its node's pods and their network namespaces; "+
		"it shares the node's process namespace (hostPID) to enter them (empty: no runtime, no pods)")
	f.StringVar(&cniInstall.Plugin, "cni-plugin", "", "the netshift-cni binary to install into the node's CNI binary directory and chain into its CNI configuration, kept so (empty: not installed)")
	f.StringVar(&cniInstall.ConfDir, "cni-conf-dir", "/etc/cni/net.d", "the node's CNI configuration directory: netshift-cni is chained into the file the runtime uses, the first .conf, .conflist or .json by name "+
		"(a single plugin's .conf or .json stays as it is: netshift writes <base>-netshift.conflist of it, which the runtime loads first)")
	f.StringVar(&cniInstall.BinDir, "cni-bin-dir", "/opt/cni/bin", "the node's CNI binary directory")
	f.BoolVar(&cniPools, "cni-port-pools", false, "netshift-cni wraps the network plugin's entry and wires the pods of namespaces labelled "+
		"netshift.io/port-pools=enabled to the Neutron ports their pools hand them (needs --cni-plugin, --ovsdb, --cni-node-kubeconfig)")
	f.StringVar(&cniInstall.NodeKubeconfig, "cni-node-kubeconfig", "/etc/kubernetes/kubelet.conf", "with --cni-port-pools: the node's own kubeconfig (the kubelet's), "+
		"from which netshift-cni's identity is written: as the node, it may read only the pods bound to it")
	f.StringVar(&trunkBridge, "cni-trunk-bridge", "", "with --cni-port-pools, on a node that is a VM with a Neutron trunk: the bridge whose uplink is "+
		"its trunk NIC, where netshift-cni plugs a pod's subport as an access port of its VLAN (empty: none)")
	f.IntVar(&parkedDevices, "cni-parked-devices", 16, "with --cni-port-pools: how many devices of pooled pods the node keeps plugged, parked, after their pods go, "+
		"for the next pod their pool hands the same port to (no new plug, the port stays bound and ACTIVE); 0 keeps none")
	f.DurationVar(&parkedTTL, "cni-parked-ttl", 5*time.Minute, "with --cni-port-pools: how long a parked device is kept before the agent removes it (1s to 24h)")
	labHooks = labAgentFlags(f)
	return cmd
}
