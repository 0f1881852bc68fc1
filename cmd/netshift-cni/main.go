// Command netshift-cni is netshift's CNI plugin, chained after the cluster's
// main plugin: it gives each new pod the MTU in force on its node. The agent's
// DaemonSet installs it into the node's CNI binary directory.
package main

import (
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"netshift.io/netshift/internal/cni"
)

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cni.Add, Check: cni.Check, Del: cni.Del},
		version.All, "netshift-cni: gives each pod the MTU in force on its node")
}
