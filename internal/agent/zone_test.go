package agent

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/testenv"
	"netshift.io/netshift/internal/zones"
)

// The agent moves its node when asked, and writes the zone annotation only
// after the move worked; a failed move is reported and retried.
func TestAgentMovesItsNodeBetweenZones(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	node := "zone-1"
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	nns := &v1alpha1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.Create(ctx, nns); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var reported atomic.Bool
	move := func(_ context.Context, n, zone string) error {
		call := calls.Add(1)
		var got corev1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: n}, &got); err == nil && got.Annotations[zones.ZoneAnnotation] == zone {
			t.Errorf("the annotation was written before the move")
		}
		if call == 1 {
			return errors.New("ovn-controller not bound yet")
		}
		// The retry comes after the failure was reported.
		var st v1alpha1.NodeNetworkState
		if err := c.Get(ctx, types.NamespacedName{Name: n}, &st); err == nil && strings.Contains(st.Status.ZoneError, "ovn-controller not bound yet") {
			reported.Store(true)
		}
		return nil
	}
	mgr, err := NewManager(env.AgentConfig(node), Options{Node: node, HealthAddr: "0", ManyInProcess: true, MoveZone: move})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); <-done }()

	nns.Spec.Zone = node
	if err := c.Update(ctx, nns); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got corev1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: node}, &got); err == nil && got.Annotations[zones.ZoneAnnotation] == node {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node was never annotated after the retried move (%d calls)", calls.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "the error cleared", func() bool {
		var got v1alpha1.NodeNetworkState
		return c.Get(ctx, types.NamespacedName{Name: node}, &got) == nil && got.Status.ZoneError == ""
	})
	if n := calls.Load(); n != 2 {
		t.Errorf("%d moves, want 2 (one failed, one retried)", n)
	}
	if !reported.Load() {
		t.Errorf("the failed move was not in status.zoneError before the retry")
	}
}
