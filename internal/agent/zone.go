package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/zones"
)

// ZoneMover moves the node's ovn-controller into an OVN interconnect zone
// ("global" or the node's own) and returns once it is bound there and traffic
// to the other zones passes: only then does the agent write the node's zone
// annotation, so the annotation never lies. It must be idempotent.
type ZoneMover func(ctx context.Context, node, zone string) error

// CommandZoneMover runs a command (sh -c) as the move, with NETSHIFT_NODE and
// NETSHIFT_ZONE in its environment.
func CommandZoneMover(command string) ZoneMover {
	return func(ctx context.Context, node, zone string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Env = append(os.Environ(), "NETSHIFT_NODE="+node, "NETSHIFT_ZONE="+zone)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("zone move command %q: %w: %s", command, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
}

// moveZone moves the node to spec.zone when its annotation says otherwise.
func (a *Agent) moveZone(ctx context.Context, nns *v1alpha1.NodeNetworkState) (ctrl.Result, error) {
	zone := nns.Spec.Zone
	var node corev1.Node
	if err := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &node); err != nil {
		return ctrl.Result{}, err
	}
	if node.Annotations[zones.ZoneAnnotation] == zone {
		if nns.Status.ZoneError != "" {
			return ctrl.Result{}, a.report(ctx, nns, func(s *v1alpha1.NodeNetworkStateStatus) { s.ZoneError = "" })
		}
		return ctrl.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("node", a.Node, "zone", zone)
	if a.MoveZone == nil {
		msg := fmt.Sprintf("node %s: asked to move to zone %s, but this agent has no zone move (--zone-move-command)", a.Node, zone)
		return ctrl.Result{}, a.report(ctx, nns, func(s *v1alpha1.NodeNetworkStateStatus) { s.ZoneError = msg })
	}
	start := time.Now()
	logger.Info("moving the node's ovn-controller to its zone")
	if err := a.MoveZone(ctx, a.Node, zone); err != nil {
		msg := fmt.Sprintf("node %s: move to zone %s: %v", a.Node, zone, err)
		logger.Error(err, "zone move failed; retrying in 10s")
		return ctrl.Result{RequeueAfter: 10 * time.Second}, a.report(ctx, nns, func(s *v1alpha1.NodeNetworkStateStatus) { s.ZoneError = msg })
	}
	// Bound and passing traffic: now the annotation may say so.
	patch := client.MergeFrom(node.DeepCopy())
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[zones.ZoneAnnotation] = zone
	if err := a.Client.Patch(ctx, &node, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("node %s: annotate zone %s: %w", a.Node, zone, err)
	}
	logger.Info("node moved", "took", time.Since(start).String())
	if nns.Status.ZoneError != "" {
		return ctrl.Result{}, a.report(ctx, nns, func(s *v1alpha1.NodeNetworkStateStatus) { s.ZoneError = "" })
	}
	return ctrl.Result{}, nil
}
