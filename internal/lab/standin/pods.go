package standin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/zones"
)

// Node is the stand-in's node pod: it moves node into the zone of its
// label, annotates it, reports ready and waits to be stopped. A failed move
// is its exit (the kubelet starts it again, backing off).
func Node(ctx context.Context, c client.Client, node, dir string, out io.Writer) error {
	var n corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
		return fmt.Errorf("node %s: read its zone label: %w", node, err)
	}
	zone := n.Labels[zones.ZoneLabel]
	if zone == "" {
		fmt.Fprintf(out, "node %s: no %s label: the node stays in the layout it has\n", node, zones.ZoneLabel)
		return serve(ctx, nil)
	}
	start := time.Now()
	fmt.Fprintf(out, "node %s: joining zone %s\n", node, zone)
	if err := Ask(ctx, dir, out, 5*time.Minute, "zone-move", node, zone); err != nil {
		return fmt.Errorf("node %s: move to zone %s: %w", node, zone, err)
	}
	if n.Annotations[zones.ZoneAnnotation] != zone {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, zones.ZoneAnnotation, zone)
		if err := c.Patch(ctx, &n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return fmt.Errorf("node %s: annotate its zone %s: %w", node, zone, err)
		}
	}
	fmt.Fprintf(out, "node %s: in zone %s, annotated, %d ms after the pod started\n", node, zone, time.Since(start).Milliseconds())
	return serve(ctx, nil)
}

// Central is the stand-in's central pod: it starts the central zone,
// reports ready, and when stopped retires it (refused while nodes are still
// in it: a restarted pod leaves it running).
func Central(ctx context.Context, dir string, out io.Writer) error {
	if err := Ask(ctx, dir, out, 5*time.Minute, "zone-central", "ensure"); err != nil {
		return fmt.Errorf("start the central zone: %w", err)
	}
	fmt.Fprintln(out, "the central zone runs")
	return serve(ctx, func() {
		// The pod's context is over: the retirement gets its own time within the grace period.
		rctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		if err := Ask(rctx, dir, out, 50*time.Second, "zone-central", "retire"); err != nil {
			fmt.Fprintf(out, "the central zone is left running: %v\n", err)
			return
		}
		fmt.Fprintln(out, "the central zone is retired")
	})
}

// serve reports the pod ready and waits until it is stopped; then it runs
// atStop.
func serve(ctx context.Context, atStop func()) error {
	if err := os.MkdirAll(filepath.Dir(readyFile), 0o755); err != nil {
		return fmt.Errorf("report ready: %w", err)
	}
	if err := os.WriteFile(readyFile, []byte("ready\n"), 0o644); err != nil {
		return fmt.Errorf("report ready: %w", err)
	}
	<-ctx.Done()
	_ = os.Remove(readyFile)
	if atStop != nil {
		atStop()
	}
	return nil
}
