package agent

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/internal/cni"
)

// CNIInstall installs netshift-cni on the node and keeps it chained into the
// node's CNI configuration: the network plugin may write its configuration
// again at any time (a restart, an upgrade), dropping netshift's entry.
type CNIInstall struct {
	// Plugin is the netshift-cni binary to install (in the agent's image).
	Plugin string
	// ConfDir and BinDir are the node's CNI directories, as mounted into the agent.
	ConfDir, BinDir string
	// NetworkConfig is the node's configuration file as the plugin, on the node, reads it.
	NetworkConfig string
	// Every is how often the chain is checked.
	Every time.Duration
}

// Start runs until ctx ends (a controller-runtime Runnable).
func (c CNIInstall) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("cni-install")
	every := c.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	last := ""
	for {
		changed, err := cni.Install(c.ConfDir, c.BinDir, c.Plugin, c.NetworkConfig)
		switch {
		case err != nil && err.Error() != last:
			logger.Error(err, "netshift-cni is not installed; new pods get the network plugin's MTU until it is")
			last = err.Error()
		case err == nil && changed:
			logger.Info("netshift-cni installed and chained", "confDir", c.ConfDir, "binDir", c.BinDir)
			last = ""
		}
		wait := every
		if err != nil {
			wait = 2 * time.Second // the network plugin is coming up: look again soon
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
