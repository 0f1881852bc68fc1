package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/nodeconfig"
)

// uninstall takes netshift off the node for `netshift uninstall`: it stops
// keeping netshift-cni chained, unchains it (a .conf it made a list of goes
// back to the plugin's .conf) and removes its binary and identity, then
// netshift's own files. Plugged ports stay: they carry their pods' traffic.
// It reports what it removed, and tries again while anything is left.
func (a *Agent) uninstall(ctx context.Context, nns *v1alpha1.NetshiftNodeState) (ctrl.Result, error) {
	var removed []string
	err := a.gate.takeOff(func() error {
		var err error
		removed, err = a.removeNetshift()
		return err
	})
	if r := nns.Status.Uninstall; r != nil && r.Done && err == nil && len(removed) == 0 {
		return ctrl.Result{}, nil // reported already, and nothing came back since
	}
	rep := &v1alpha1.UninstallReport{Done: err == nil, Removed: removed}
	if err != nil {
		rep.Error = fmt.Sprintf("node %s: %v", a.Node, err)
	}
	log.FromContext(ctx).Info("netshift taken off the node", "node", a.Node, "removed", removed, "error", rep.Error)
	if err := a.report(ctx, nns, func(s *v1alpha1.NetshiftNodeStateStatus) { s.Uninstall = rep }); err != nil {
		return ctrl.Result{}, err
	}
	if rep.Error != "" {
		return ctrl.Result{RequeueAfter: uninstallRetry}, nil
	}
	return ctrl.Result{}, nil
}

// offAtStart says whether netshift was taken off the node before this agent
// started (an error reads as not: the Reconcile of its state takes it off).
func offAtStart(r client.Reader, node string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nns v1alpha1.NetshiftNodeState
	return r.Get(ctx, client.ObjectKey{Name: node}, &nns) == nil && nns.Spec.Uninstall
}

const uninstallRetry = 5 * time.Second

// removeNetshift removes what netshift put on the node, naming each thing.
func (a *Agent) removeNetshift() ([]string, error) {
	var removed []string
	var errs []error
	if c := a.cni; c != nil && c.Plugin != "" {
		if changed, err := cni.Uninstall(c.ConfDir, c.BinDir); err != nil {
			errs = append(errs, fmt.Errorf("unchain netshift-cni: %w", err))
		} else if changed {
			removed = append(removed, "netshift-cni from "+c.ConfDir+" and "+c.BinDir)
		}
	}
	var files []string
	if a.NetworkConfig != "" {
		files = append(files, a.NetworkConfig, nodeconfig.LockPath(a.NetworkConfig))
	}
	if c := a.cni; c != nil && c.Pool != nil {
		files = append(files, c.Pool.Namespaces, c.Pool.StateDir)
	}
	for _, f := range files {
		if _, err := os.Lstat(f); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(f); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, f)
	}
	return removed, errors.Join(errs...)
}
