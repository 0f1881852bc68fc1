package agent

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
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
	// Pool, when set, makes netshift-cni wrap the network plugin's entry to
	// wire the pods of pool-enabled namespaces to their pooled Neutron ports
	// (its Delegate is filled from the node's configuration).
	Pool *cni.PoolConfig
	// NodeKubeconfig is the node's own kubeconfig (the kubelet's), as mounted
	// into the agent: with Pool, netshift-cni's identity is written from it
	// to Pool.Kubeconfig.
	NodeKubeconfig string
	// Every is how often the chain is checked.
	Every time.Duration
	// ParkedTTL is how long a device netshift-cni parked (Pool.ParkedDevices)
	// is kept for its port's next pod before the agent removes it.
	ParkedTTL time.Duration
	// DelGrace is how long a deleted pod's port that netshift-cni wired is
	// left to its DEL (0: 30 s).
	DelGrace time.Duration
	// chained, when set, holds whether netshift-cni is chained now: the
	// agent is ready only then (new pods on the node get netshift's wiring).
	chained *atomic.Bool
	// gate, when set, stops the keeping once `netshift uninstall` took netshift-cni off, and
	// keeps an install in flight from racing with it.
	gate *offGate
}

// Start runs until ctx ends (a controller-runtime Runnable).
func (c CNIInstall) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("cni-install")
	every := c.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	// A network plugin that rewrites its configuration drops netshift-cni from it; until the agent puts
	// it back, new pods miss it (and pooled pods get the plugin's network). A watch on the
	// directory puts it back within milliseconds; the period is for what a watch can miss.
	changes := make(chan struct{}, 1)
	if w, err := fsnotify.NewWatcher(); err != nil {
		logger.Error(err, "cannot watch the CNI configuration directory; checking it every period only", "confDir", c.ConfDir, "every", every.String())
	} else {
		defer w.Close()
		if err := w.Add(c.ConfDir); err != nil {
			logger.Error(err, "cannot watch the CNI configuration directory; checking it every period only", "confDir", c.ConfDir, "every", every.String())
		}
		go forwardChanges(ctx, w, changes)
	}
	last := ""
	for {
		changed, ran, err := c.installOnce()
		if c.chained != nil {
			c.chained.Store(ran && err == nil)
		}
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
		case <-changes:
		case <-time.After(wait):
		}
	}
}

// installOnce installs unless netshift was taken off the node (ran false).
func (c CNIInstall) installOnce() (changed, ran bool, err error) {
	if c.gate == nil {
		changed, err = c.install()
		return changed, true, err
	}
	ran, err = c.gate.do(func() error {
		var err error
		changed, err = c.install()
		return err
	})
	return changed, ran, err
}

// install writes what netshift-cni needs on the node: its binary, its place
// in the node's CNI configuration and, with pools, its identity.
func (c CNIInstall) install() (bool, error) {
	identity := false
	if c.Pool != nil {
		// Chained before the node lists its pool-enabled namespaces,
		// netshift-cni would give a pooled pod the plugin's network.
		if _, err := os.Stat(c.Pool.Namespaces); err != nil {
			return false, fmt.Errorf("waiting for the node's list of pool-enabled namespaces, which the agent writes once it has read them: %w", err)
		}
		var err error
		if identity, err = writeNodeKubeconfig(c.NodeKubeconfig, c.Pool.Kubeconfig); err != nil {
			return false, err
		}
	}
	changed, err := cni.Install(c.ConfDir, c.BinDir, c.Plugin, c.NetworkConfig, c.Pool)
	return changed || identity, err
}

// forwardChanges turns the watch's events into at most one pending wake-up.
// The agent's own write is an event too: the next look finds nothing to do.
func forwardChanges(ctx context.Context, w *fsnotify.Watcher, changes chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			select {
			case changes <- struct{}{}:
			default:
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		}
	}
}
