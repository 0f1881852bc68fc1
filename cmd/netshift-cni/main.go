// Command netshift-cni is netshift's CNI plugin. Chained after the cluster's
// main plugin, it gives each new pod the MTU in force on its node; with a
// "pool" section it is the node's main plugin, wiring the pods of
// pool-enabled namespaces to their pooled Neutron ports and handing every
// other pod to the plugin it wraps. The agent's DaemonSet installs it into
// the node's CNI binary directory.
package main

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/cni"
)

func main() {
	// The runtime reads a plugin's stdout as its result and shows its error; the OVSDB
	// library's logs have nowhere to go.
	ctrllog.SetLogger(logr.Discard())
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cni.Add, Check: cni.Check, Del: cni.Del},
		version.All, "netshift-cni: the pods' MTU, and pooled Neutron ports for the pods of pool-enabled namespaces")
}
