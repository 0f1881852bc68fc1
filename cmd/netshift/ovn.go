package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"netshift.io/netshift/internal/ovs"
)

// ovnDBFlags are the operator's flags for one OVN database: its endpoint
// and, for an ssl: endpoint, the client's files. They are per database, as
// OVN-Kubernetes' --nb-client-* and --sb-client-* are, under the same
// names with --ovn- in front: the two databases may trust different CAs,
// and a flag of OVN-Kubernetes' maps to exactly one of netshift's.
type ovnDBFlags struct {
	flag     string // "ovn-nb" or "ovn-sb"
	db       string // "northbound" or "southbound", for help texts
	endpoint string
	tls      ovs.TLS
}

func (d *ovnDBFlags) register(f *pflag.FlagSet, usage string) {
	p := "--" + d.flag
	f.StringVar(&d.endpoint, d.flag, "", usage+" (unix:PATH, tcp:HOST:PORT, or ssl:HOST:PORT with "+p+"-client-privkey, "+p+"-client-cert and "+p+"-client-cacert)")
	f.StringVar(&d.tls.Key, d.flag+"-client-privkey", "", "with an ssl: "+p+": the private key (PEM) of the client certificate netshift presents to the "+d.db+
		" database (per database, as OVN-Kubernetes' own flags; usually the same files for both); the files are read again at every reconnect, so a rotated Secret's take effect")
	f.StringVar(&d.tls.Cert, d.flag+"-client-cert", "", "with an ssl: "+p+": the client certificate (PEM) netshift presents to the "+d.db+" database")
	f.StringVar(&d.tls.CA, d.flag+"-client-cacert", "", "with an ssl: "+p+": the CA certificate(s) (PEM) the "+d.db+" database's certificate must chain to")
	f.StringVar(&d.tls.ServerName, d.flag+"-cert-common-name", "", "with an ssl: "+p+": a name the "+d.db+
		" database's certificate must carry as its common name (as ovs-pki writes it) or a DNS name (OVN-Kubernetes' flag of that name); empty: any certificate the CA issued for a server, as OVN's own clients accept")
}

// options checks the flags and returns the endpoint and, for ssl:, what it
// is reached with: an endpoint of a form netshift dials, the files an ssl:
// endpoint needs (readable and parsable), and no file for another endpoint.
func (d *ovnDBFlags) options() (string, *ovs.TLS, error) {
	set := d.tlsFlagsSet()
	if d.endpoint == "" {
		if len(set) > 0 {
			return "", nil, fmt.Errorf("%s: goes with an ssl: --%s, which is not set", set[0], d.flag)
		}
		return "", nil, nil
	}
	if err := ovs.CheckEndpoint(d.endpoint); err != nil {
		return "", nil, fmt.Errorf("--%s: %w", d.flag, err)
	}
	if !ovs.IsSSL(d.endpoint) {
		if len(set) > 0 {
			return "", nil, fmt.Errorf("%s: goes with an ssl: --%s, not %s", set[0], d.flag, d.endpoint)
		}
		return d.endpoint, nil, nil
	}
	p := "--" + d.flag
	if missing := d.missingFiles(); len(missing) > 0 {
		return "", nil, fmt.Errorf("%s: %s needs %s-client-privkey, %s-client-cert and %s-client-cacert (missing: %s)",
			p, d.endpoint, p, p, p, strings.Join(missing, ", "))
	}
	if err := d.tls.CheckClientCert(); err != nil {
		return "", nil, fmt.Errorf("%s-client-cert, %s-client-privkey: %w", p, p, err)
	}
	if err := d.tls.CheckCA(); err != nil {
		return "", nil, fmt.Errorf("%s-client-cacert: %w", p, err)
	}
	t := d.tls
	return d.endpoint, &t, nil
}

// tlsFlags are the flags of an ssl: endpoint, by suffix, with their values.
func (d *ovnDBFlags) tlsFlags() []struct{ suffix, v string } {
	return []struct{ suffix, v string }{{"-client-privkey", d.tls.Key}, {"-client-cert", d.tls.Cert},
		{"-client-cacert", d.tls.CA}, {"-cert-common-name", d.tls.ServerName}}
}

// tlsFlagsSet names the flags of an ssl: endpoint that are given.
func (d *ovnDBFlags) tlsFlagsSet() []string {
	var set []string
	for _, f := range d.tlsFlags() {
		if f.v != "" {
			set = append(set, "--"+d.flag+f.suffix)
		}
	}
	return set
}

// missingFiles names the file flags an ssl: endpoint needs that are not given.
func (d *ovnDBFlags) missingFiles() []string {
	var missing []string
	for _, f := range d.tlsFlags()[:3] {
		if f.v == "" {
			missing = append(missing, "--"+d.flag+f.suffix)
		}
	}
	return missing
}
