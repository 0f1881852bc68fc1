//go:build lab

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/probe"
)

func labCmd(g *globals) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A real multi-node cluster on this machine: nodes with their own Open vSwitch, containerd, kubelet and kube-proxy, a real control plane, netshift installed from config/",
	}
	cmd.PersistentFlags().StringVar(&name, "name", "lab", "lab name (1 to 8 lowercase letters or digits); one lab runs on a machine at a time")
	cmd.AddCommand(labUpCmd(&name), labDownCmd(&name), labStatusCmd(&name), labKubeconfigCmd(&name), labExecCmd(&name),
		labServeCmd(&name), labProbeCmd(&name), labRebuildNodeCmd(&name), labMigrateCmd(&name),
		labZoneMoveCmd(&name), labZoneCentralCmd(&name), labUpgradeZonesCmd(&name), labZoneBenchCmd(&name))
	return cmd
}

func labUpCmd(name *string) *cobra.Command {
	o := lab.DefaultOptions()
	var tunnel string
	var labels, agentArgs []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build a lab: its nodes, control plane, netshift (from config/lab) and the probe's pods",
		Example: `  netshift lab up                         # 3 nodes, 2 pods each, VXLAN, underlay MTU 1500, pod MTU 1450
  netshift lab up --name big --nodes 10 --tunnel geneve
  netshift lab up --ovn --node-label node-1:zone=a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("mtu") && o.MTU == 0 {
				return usagef("--mtu: 0 is not a pod MTU (576 up to the underlay MTU minus the tunnel overhead; leave the flag out for that maximum)")
			}
			o.Tunnel = lab.Tunnel(tunnel)
			if o.OVN && !cmd.Flags().Changed("tunnel") {
				o.Tunnel = lab.Geneve
			}
			for _, l := range labels {
				node, kv, ok1 := strings.Cut(l, ":")
				k, v, ok2 := strings.Cut(kv, "=")
				if !ok1 || !ok2 || node == "" || k == "" {
					return usagef("--node-label: %q is not NODE:KEY=VALUE", l)
				}
				if o.NodeLabels == nil {
					o.NodeLabels = map[string]map[string]string{}
				}
				if o.NodeLabels[node] == nil {
					o.NodeLabels[node] = map[string]string{}
				}
				o.NodeLabels[node][k] = v
			}
			for _, a := range agentArgs {
				node, arg, ok := strings.Cut(a, ":")
				if !ok || node == "" || !strings.HasPrefix(arg, "--") {
					return usagef("--agent-arg: %q is not NODE:--FLAG[=VALUE]", a)
				}
				if o.AgentArgs == nil {
					o.AgentArgs = map[string][]string{}
				}
				o.AgentArgs[node] = append(o.AgentArgs[node], arg)
			}
			o.Name = *name
			o.Derive()
			if err := o.Validate(); err != nil {
				return asUsage(err)
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			_, err = lab.Up(cmd.Context(), o, bin, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "number of nodes (1..50)")
	f.IntVar(&o.PodsPerNode, "pods-per-node", o.PodsPerNode, "pods per node (0..50)")
	f.StringVar(&tunnel, "tunnel", string(o.Tunnel), "vxlan or geneve (OVN: geneve)")
	f.BoolVar(&o.OVN, "ovn", false, "OVN: ovn-controller per node, central NB/SB and ovn-northd, routed pod network")
	f.BoolVar(&o.Neutron, "neutron", false, "a real neutron-server (ML2/OVN, on the lab's OVN databases; implies --ovn --zones legacy) and netshift's port pools: "+
		"pods of namespaces labelled netshift.io/port-pools=enabled get Neutron ports, wired by netshift-cni (namespace "+lab.PoolNamespace+" is)")
	f.StringArrayVar(&o.TrunkNodes, "neutron-trunk-node", nil, "with --neutron: set this node up as a VM with a Neutron trunk (a parent port bound to it, "+
		"its trunk, and bridge "+lab.TrunkBridge+" whose uplink carries the parent's VLANs); its pooled pods get subports (repeatable)")
	f.StringVar(&o.OVNKubernetes, "ovn-kubernetes", "", "a directory holding OVN-Kubernetes' binaries (ovnkube, ovn-k8s-cni-overlay, ovn-kube-util): the lab's network plugin is then the real OVN-Kubernetes, one zone per node, run as pods from the lab's manifests (see docs/lab.md)")
	f.StringVar(&o.Zones, "zones", "", "with --ovn: the OVN interconnect layout to build, legacy (central, no zones), single (one zone \"global\", the default) or multi (a zone per node); the matching ConfigMap is written, so the lab never moves zones by itself")
	f.IntVar(&o.UnderlayMTU, "underlay-mtu", o.UnderlayMTU, "underlay MTU (1280..9000)")
	f.IntVar(&o.MTU, "mtu", 0, "pod MTU (default: underlay MTU minus the tunnel overhead, 50 for VXLAN, 58 for Geneve)")
	f.StringArrayVar(&labels, "node-label", nil, "a label for a node, NODE:KEY=VALUE (repeatable)")
	f.StringVar(&o.Layout, "node-layout", "containerd", "where the nodes' runtime socket and CNI files are: containerd, crio or k3s (the lab's containerd serves "+
		"at that runtime's socket; netshift is installed with its config/components/runtime-* component)")
	f.BoolVar(&o.WithoutNetshift, "without-netshift", false, "bring the lab up as a cluster netshift is yet to be installed on: the network plugin and the pods, "+
		"netshift's manifests written to the lab's config/ directory but not applied (the quick start's starting point; plain VXLAN or Geneve)")
	f.BoolVar(&o.CNIConf, "cni-conf", false, "the stand-in network plugin writes a single-plugin .conf, as OVN-Kubernetes and Multus do, instead of a .conflist")
	f.StringArrayVar(&o.FailReboots, "fail-reboot", nil, "make this node's reboot, asked by its agent's --reboot-command, fail (repeatable; tests of a failed reboot)")
	f.StringArrayVar(&agentArgs, "agent-arg", nil, "a test hook for a node's agent, NODE:--FLAG=VALUE, set as the node's label lab.netshift.io/FLAG (repeatable; --clock-offset=200ms or --fail-step-once=STEP)")
	return cmd
}

func labDownCmd(name *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove everything a lab created (and nothing else), even after a crash halfway",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.Down(cmd.Context(), *name, cmd.OutOrStdout())
		},
	}
	return cmd
}

func labStatusCmd(name *string) *cobra.Command {
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a lab's nodes, pods, processes and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := lab.StatusOf(cmd.Context(), *name)
			if err != nil {
				return err
			}
			return output.write(cmd.OutOrStdout(), st, st.WriteText)
		},
	}
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}

func labKubeconfigCmd(name *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the lab's admin kubeconfig (export KUBECONFIG=$(netshift lab kubeconfig))",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			if s.Kubeconfig == "" {
				return fmt.Errorf("lab %s has no API server yet (still starting, or its supervisor failed: see %s)", *name, s.Path("supervisor.log"))
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.Kubeconfig)
			return nil
		},
	}
	return cmd
}

func labExecCmd(name *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec NODE|POD -- CMD [ARGS...]",
		Short: "Run a command inside a lab node's or pod's network namespace (OVS tools reach the node's own OVS)",
		Example: `  netshift lab exec node-1 -- ovs-vsctl show
  netshift lab exec pod-1-1 -- ip addr`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			netns, env, err := s.ExecTarget(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			c := exec.CommandContext(cmd.Context(), "ip", append([]string{"netns", "exec", netns}, args[1:]...)...)
			if strings.HasPrefix(netns, "/") { // a real pod's namespace, through its sandbox's process
				c = exec.CommandContext(cmd.Context(), "nsenter", append([]string{"--net=" + netns, "--"}, args[1:]...)...)
			}
			c.Env = append(os.Environ(), env...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			return c.Run()
		},
	}
	return cmd
}

func labRebuildNodeCmd(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild-node NODE",
		Short: "Reboot a lab node, as its agent's --reboot-command does, and wait until it runs again",
		Long: `Reboot a lab node: its kubelet, kube-proxy, pods, containerd and mount namespace stop, its
Open vSwitch comes back to the node's network configuration, the node gets a new boot ID, and its
daemons start again; the kubelet recreates its pods through the CNI chain. Nothing of the machine
changes. The lab's stand-in for a reboot of a node by hand.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := lab.LoadState(*name)
			if err != nil {
				return err
			}
			return s.RebuildNode(cmd.Context(), args[0])
		},
	}
}

func labServeCmd(name *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "serve",
		Short:  "The lab's supervisor (started by lab up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			return lab.Serve(cmd.Context(), *name, bin)
		},
	}
	return cmd
}

func labProbeCmd(name *string) *cobra.Command {
	var reportFile string
	var output outputFormat
	var duration time.Duration
	report := func(cmd *cobra.Command, r probe.Report) error {
		err := output.write(cmd.OutOrStdout(), r, func(w io.Writer) error {
			lab.WriteProbeText(w, r)
			return nil
		})
		if err != nil {
			return err
		}
		if !r.OK {
			return fmt.Errorf("probe: %s", strings.Join(r.Failed(), "; "))
		}
		return nil
	}
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Measure live traffic between pods on different nodes: long-lived and short-lived TCP, HTTPS with a large certificate",
		Long: `Runs, between pods on different nodes: long-lived TCP connections exchanging a
message every 5 ms (did each survive, longest gap), short-lived TCP connections
opened continuously (attempts, failures), and HTTPS requests to a server with a
certificate well over 16 KB (attempts, TLS failures, non-200 answers). A
long-lived connection silent when the probe ends has 15 s to echo again before it
counts as dead. Exits non-zero when a connection died or anything failed. 'probe start' runs it in the
background while something changes the network; 'probe stop' prints the report.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if duration < 0 || (duration > 0 && duration < time.Second) {
				return usagef("--duration: %s must be 0 (until interrupted) or at least 1s", duration)
			}
			r, err := lab.RunProbe(cmd.Context(), *name, duration, reportFile)
			if err != nil {
				return err
			}
			return report(cmd, r)
		},
	}
	addOutputFlag(cmd.PersistentFlags(), &output)
	cmd.Flags().DurationVar(&duration, "duration", 20*time.Second, "how long to measure (0: until interrupted)")
	cmd.Flags().StringVar(&reportFile, "report-file", "", "also write the JSON report to this file")
	cmd.AddCommand(&cobra.Command{
		Use:   "start",
		Short: "Start the probe in the background",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			if err := lab.StartProbe(*name, bin); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "probe running in lab %s; `netshift lab probe stop --name %s` ends it and prints the report\n", *name, *name)
			return nil
		},
	}, &cobra.Command{
		Use:   "stop",
		Short: "Stop the background probe and print its report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := lab.StopProbe(*name)
			if err != nil {
				return err
			}
			return report(cmd, r)
		},
	})
	return cmd
}
