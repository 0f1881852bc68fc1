package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	nns := createZoneNode(t, node, "")
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
	defer startZoneAgent(t, node, move)()

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

// An agent stopped in the middle of a move (its move cut off) writes no
// annotation; the agent started in its place moves the node again and only
// then annotates it.
func TestAgentRestartedMidMoveBetweenZonesResumes(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c := env.Client
	node := "zone-restart-1"
	createZoneNode(t, node, node)
	annotated := func() bool {
		var got corev1.Node
		return c.Get(ctx, types.NamespacedName{Name: node}, &got) == nil && got.Annotations[zones.ZoneAnnotation] == node
	}
	inMove := make(chan struct{})
	stopFirst := startZoneAgent(t, node, func(ctx context.Context, _, _ string) error {
		close(inMove)
		<-ctx.Done() // the agent is stopped before its move ends
		return ctx.Err()
	})
	select {
	case <-inMove:
	case <-time.After(20 * time.Second):
		t.Fatal("the first agent never started the move")
	}
	stopFirst()
	if annotated() {
		t.Fatal("a move cut off by the agent's stop annotated the node")
	}

	var zonesAsked []string
	var mu sync.Mutex
	stopSecond := startZoneAgent(t, node, func(_ context.Context, n, zone string) error {
		mu.Lock()
		zonesAsked = append(zonesAsked, n+"->"+zone)
		mu.Unlock()
		return nil
	})
	defer stopSecond()
	waitFor(t, "the restarted agent to move and annotate the node", annotated)
	mu.Lock()
	defer mu.Unlock()
	if len(zonesAsked) != 1 || zonesAsked[0] != node+"->"+node {
		t.Errorf("the restarted agent's moves: %v, want one into %s", zonesAsked, node)
	}
}

// createZoneNode creates a Node and its NodeNetworkState asking for zone.
func createZoneNode(t *testing.T, node, zone string) *v1alpha1.NodeNetworkState {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	nns := &v1alpha1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NodeNetworkStateSpec{Zone: zone}}
	if err := env.Client.Create(ctx, nns); err != nil {
		t.Fatal(err)
	}
	return nns
}

// startZoneAgent runs node's agent with move until the returned stop.
func startZoneAgent(t *testing.T, node string, move ZoneMover) (stop func()) {
	t.Helper()
	mgr, err := NewManager(env.AgentConfig(node), Options{Node: node, HealthAddr: "0", ManyInProcess: true, MoveZone: move})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent of %s: %v", node, err)
		}
	}
}
