// Package plugins picks a network plugin's drivers by name: the one place
// that knows every driver.
package plugins

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/ovnkubernetes"
	"netshift.io/netshift/internal/netplugin/ovsbridge"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/ovs"
)

// Default is the plugin an agent or operator given none drives: pods on an
// Open vSwitch bridge (the lab's own plugin).
const Default = ovsbridge.Name

// Names are the drivers --network-plugin takes.
var Names = []string{ovsbridge.Name, ovnkubernetes.Name}

// ClusterEnv is what the operator gives a plugin's cluster driver.
type ClusterEnv struct {
	// Southbound is the OVN southbound database the operator was given (--ovn-southbound), if any.
	Southbound *ovs.Southbound
	// Reader reads from the API server, uncached; Client writes.
	Reader client.Reader
	Client client.Client
	// Now is the operator's clock.
	Now func() time.Time
}

// Node is the node driver of the plugin named name.
func Node(name string, env nodenet.Env) (netplugin.Node, error) {
	switch name {
	case ovsbridge.Name:
		return ovsbridge.NewNode(env), nil
	case ovnkubernetes.Name:
		return ovnkubernetes.NewNode(env), nil
	}
	return nil, unknown(name)
}

// Cluster is the cluster driver of the plugin named name.
func Cluster(name string, env ClusterEnv) (netplugin.Cluster, error) {
	switch name {
	case ovsbridge.Name:
		return &ovsbridge.Cluster{Southbound: env.Southbound}, nil
	case ovnkubernetes.Name:
		return &ovnkubernetes.Cluster{Reader: env.Reader, Client: env.Client, Now: env.Now, Southbound: env.Southbound}, nil
	}
	return nil, unknown(name)
}

// Check refuses a name no driver has, naming the ones there are.
func Check(name string) error {
	for _, n := range Names {
		if n == name {
			return nil
		}
	}
	return unknown(name)
}

func unknown(name string) error {
	return fmt.Errorf("--network-plugin: %q is not a network plugin netshift has a driver for (%s)", name, strings.Join(Names, ", "))
}
