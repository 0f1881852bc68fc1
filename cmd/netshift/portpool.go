package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/portpool"
	poolmanager "netshift.io/netshift/internal/portpool/manager"
)

// DefaultPortPoolAPI is where the operator serves the pool manager's API.
const DefaultPortPoolAPI = "/run/netshift/portpool.sock"

// portPoolFlags are the operator's port pool flags.
type portPoolFlags struct {
	enabled               bool
	neutronURL            string
	cloudsFile, cloud     string
	settings              portpool.Settings
	deferred              bool
	clusterID, api        string
	apiTLS                poolmanager.TLSFiles
	project, network, sgs string
}

func (p *portPoolFlags) register(f *pflag.FlagSet) {
	d := portpool.DefaultSettings()
	f.BoolVar(&p.enabled, "port-pools", false, "run the Neutron port pools: pods of opted-in namespaces get pre-created ports")
	f.StringVar(&p.neutronURL, "neutron-url", "", "a no-auth Neutron endpoint (tests, labs); otherwise --os-clouds-file and --os-cloud")
	f.StringVar(&p.cloudsFile, "os-clouds-file", "", "a clouds.yaml with the Neutron credentials (in a cluster: a Secret mounted as a file)")
	f.StringVar(&p.cloud, "os-cloud", os.Getenv("OS_CLOUD"), "the cloud of --os-clouds-file to use")
	f.IntVar(&p.settings.MinReady, "pool-min-ready", d.MinReady, "ready ports each pool keeps (0..10000); below it a batch is created")
	f.IntVar(&p.settings.Batch, "pool-batch", d.Batch, "ports per bulk create (1..500)")
	f.IntVar(&p.settings.MaxSize, "pool-max-size", d.MaxSize, "most ports a pool holds, in use or not (0: unbounded; else at least --pool-min-ready)")
	f.DurationVar(&p.settings.IdleTimeout, "pool-idle-timeout", d.IdleTimeout, "how long a ready port above the minimum may stay unused before it is deleted (0: never)")
	f.DurationVar(&p.settings.RecyclePeriod, "pool-recycle-period", d.RecyclePeriod, "how often released ports are reset and returned (10ms..1h)")
	f.IntVar(&p.settings.MaxConcurrentCreates, "pool-max-concurrent-creates", d.MaxConcurrentCreates, "create calls in flight to Neutron at once (1..64)")
	f.BoolVar(&p.deferred, "pool-deferred-bookkeeping", false, "send Neutron bookkeeping (name, device_id) in the background, coalesced: handing out a port makes no Neutron call")
	f.StringVar(&p.clusterID, "cluster-id", "", "the cluster's name in the tag of every port netshift creates (default: the kube-system namespace's UID)")
	f.StringVar(&p.api, "portpool-api", DefaultPortPoolAPI, "address of the pool manager's API: a unix socket path (mode 0600), or tcp:HOST:PORT, served with TLS to bearer tokens RBAC allows on portpools.netshift.io (\"0\" disables it)")
	f.StringVar(&p.apiTLS.Cert, "portpool-api-tls-cert", "", "with --portpool-api tcp:...: the server certificate (PEM)")
	f.StringVar(&p.apiTLS.Key, "portpool-api-tls-key", "", "with --portpool-api tcp:...: the server key (PEM)")
	f.StringVar(&p.project, "pool-default-project", "", "project of pods whose namespace has no "+poolmanager.ProjectAnnotation+" annotation")
	f.StringVar(&p.network, "pool-default-network", "", "network of pods whose namespace has no "+poolmanager.NetworkAnnotation+" annotation")
	f.StringVar(&p.sgs, "pool-default-security-groups", "", "comma-separated security groups of pods whose namespace has no "+poolmanager.SecurityGroupsAnnotation+" annotation")
}

// settingFlags names each setting's flag, so a refused value names the flag.
var settingFlags = map[string]string{"minReady": "--pool-min-ready", "batch": "--pool-batch", "maxSize": "--pool-max-size",
	"idleTimeout": "--pool-idle-timeout", "recyclePeriod": "--pool-recycle-period", "maxConcurrentCreates": "--pool-max-concurrent-creates"}

func (p *portPoolFlags) options() (operator.PortPoolOptions, error) {
	if err := p.settings.Validate(); err != nil {
		msg := err.Error()
		for field, flag := range settingFlags {
			msg = strings.ReplaceAll(msg, field+":", flag+":")
			msg = strings.ReplaceAll(msg, " "+field+" (", " "+flag+" (")
			msg = strings.ReplaceAll(msg, "least "+field, "least "+flag)
		}
		return operator.PortPoolOptions{}, errors.New(msg)
	}
	if strings.HasPrefix(p.api, "tcp:") && (p.apiTLS.Cert == "" || p.apiTLS.Key == "") {
		return operator.PortPoolOptions{}, errors.New("--portpool-api: tcp:... is served with TLS only: give --portpool-api-tls-cert and --portpool-api-tls-key (or use the unix socket)")
	}
	if p.neutronURL == "" && p.cloudsFile == "" {
		return operator.PortPoolOptions{}, errors.New("--port-pools: give --neutron-url (no auth) or --os-clouds-file and --os-cloud")
	}
	var groups []string
	if p.sgs != "" {
		groups = strings.Split(p.sgs, ",")
	}
	return operator.PortPoolOptions{Neutron: neutron.Options{URL: p.neutronURL, CloudsFile: p.cloudsFile, Cloud: p.cloud},
		Settings: p.settings, Deferred: p.deferred, ClusterID: p.clusterID, API: p.api, APITLS: p.apiTLS,
		Defaults: poolmanager.Defaults{Project: p.project, Network: p.network, SecurityGroups: groups}}, nil
}

func portpoolCmd(g *globals) *cobra.Command {
	var server string
	var listOutput, showOutput outputFormat
	cmd := &cobra.Command{
		Use:   "portpool",
		Short: "The Neutron port pools: list, show, populate, free, drain (through the operator's API)",
	}
	var clientOpts poolmanager.ClientOptions
	cmd.PersistentFlags().StringVar(&server, "server", DefaultPortPoolAPI, "the pool manager's API: a unix socket path, or tcp:HOST:PORT (TLS, with --token)")
	cmd.PersistentFlags().StringVar(&clientOpts.Token, "token", os.Getenv("NETSHIFT_PORTPOOL_TOKEN"), "with tcp: the bearer token to present (default $NETSHIFT_PORTPOOL_TOKEN); RBAC must allow its user get (list, show), create (populate) or delete (free, drain) on portpools.netshift.io")
	cmd.PersistentFlags().StringVar(&clientOpts.CAFile, "ca-file", "", "with tcp: the CA certificate (PEM) that signed the API's certificate (default: the system's)")
	poolClient := func() (*poolmanager.Client, error) {
		c, err := poolmanager.NewClient(server, clientOpts)
		return c, asUsage(err) // only --ca-file can be refused here: nothing is dialled yet
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Every pool: ready, in use, recycling and being created",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := poolClient()
			if err != nil {
				return err
			}
			st, err := c.List(cmd.Context())
			if err != nil {
				return err
			}
			return listOutput.write(cmd.OutOrStdout(), st, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "recovered: %v   deferred bookkeeping: %v (%d pending)   ports being deleted: %d\n", st.Recovered, st.Deferred, st.Pending, st.Deleting)
				fmt.Fprintln(tw, "POOL\tREADY\tIN USE\tRECYCLING\tCREATING\tLAST ERROR")
				for _, p := range st.Pools {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", p.Key, p.Ready, p.InUse, p.Recycling, p.Creating, cmp.Or(p.LastError, "-"))
				}
				return tw.Flush()
			})
		},
	}
	show := &cobra.Command{
		Use:   "show POOL",
		Short: "One pool and its ports (POOL is project/network/host=NODE/sg1,sg2 or project/network/trunk=PORT/sgs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := portpool.ParseKey(args[0]); err != nil {
				return asUsage(err)
			}
			c, err := poolClient()
			if err != nil {
				return err
			}
			d, err := c.Show(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return showOutput.write(cmd.OutOrStdout(), d, func(w io.Writer) error {
				return writePool(w, d)
			})
		},
	}
	populate := &cobra.Command{
		Use:   "populate POOL COUNT",
		Short: "Create COUNT ports in a pool now, in bulk batches (up to the pool's maximum)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := portpool.ParseKey(args[0]); err != nil {
				return asUsage(err)
			}
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 1 || n > 10000 {
				return usagef("COUNT: %q is not a number in 1..10000", args[1])
			}
			c, err := poolClient()
			if err != nil {
				return err
			}
			made, err := c.Populate(cmd.Context(), args[0], n)
			fmt.Fprintf(cmd.OutOrStdout(), "%d ports created in %s\n", made, args[0])
			return err
		},
	}
	free := &cobra.Command{
		Use:   "free [POOL]",
		Short: "Delete the ports no pod owns, of one pool or of every pool",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := ""
			if len(args) == 1 {
				if _, err := portpool.ParseKey(args[0]); err != nil {
					return asUsage(err)
				}
				key = args[0]
			}
			c, err := poolClient()
			if err != nil {
				return err
			}
			n, err := c.Free(cmd.Context(), key)
			fmt.Fprintf(cmd.OutOrStdout(), "%d ports deleted\n", n)
			return err
		},
	}
	drain := &cobra.Command{
		Use:   "drain",
		Short: "Delete every pooled port no pod owns, in every pool (before an uninstall: nothing left to eat quota)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := poolClient()
			if err != nil {
				return err
			}
			n, err := c.Free(cmd.Context(), "")
			fmt.Fprintf(cmd.OutOrStdout(), "%d pooled ports deleted\n", n)
			if err != nil {
				return err
			}
			st, err := c.List(cmd.Context())
			if err != nil {
				return err
			}
			inUse := 0
			for _, p := range st.Pools {
				inUse += p.InUse
			}
			if inUse > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%d ports are still owned by pods; they are released when the pods are deleted\n", inUse)
			}
			return nil
		},
	}
	addOutputFlag(list.Flags(), &listOutput)
	addOutputFlag(show.Flags(), &showOutput)
	cmd.AddCommand(list, show, populate, free, drain)
	for _, c := range portpoolLabCommands {
		cmd.AddCommand(c())
	}
	return cmd
}

// writePool is `portpool show` for people.
func writePool(w io.Writer, d poolmanager.PoolDetail) error {
	fmt.Fprintf(w, "pool %s: %d ready, %d in use, %d recycling, %d being created\n", d.Key, d.Ready, d.InUse, d.Recycling, d.Creating)
	for _, p := range d.InUsePorts {
		fmt.Fprintf(w, "  in use   %s  %s  %s  %s\n", p.ID, p.MAC, strings.Join(p.IPs, ","), p.Owner)
	}
	for _, p := range d.ReadyPorts {
		fmt.Fprintf(w, "  ready    %s  %s  %s\n", p.ID, p.MAC, strings.Join(p.IPs, ","))
	}
	for _, p := range d.RecyclingPorts {
		fmt.Fprintf(w, "  recycling %s\n", p.ID)
	}
	return nil
}
