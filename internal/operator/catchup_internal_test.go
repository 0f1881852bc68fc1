package operator

import (
	"context"
	"testing"
	"time"
)

// TestSilentAgentsAreJudgedFromWhenTheControlPlaneAnswersAgain: a pass after
// more than heardGap since the last one that ended well (the API server was
// stopped) moves the time silent agents are judged from to now; passes
// closer together do not.
func TestSilentAgentsAreJudgedFromWhenTheControlPlaneAnswersAgain(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	r := &LiveChangeReconciler{Now: func() time.Time { return now }}
	r.listening = now.Add(-time.Hour)
	r.heard(context.Background())
	if want := now.Add(-time.Hour); !r.listening.Equal(want) {
		t.Fatalf("the first pass moved listening to %s", r.listening)
	}
	now = now.Add(heardGap)
	r.heard(context.Background())
	if want := now.Add(-time.Hour - heardGap); !r.listening.Equal(want) {
		t.Fatalf("a pass %s after the last moved listening to %s", heardGap, r.listening)
	}
	now = now.Add(40 * time.Second) // the API server stopped
	r.heard(context.Background())
	if !r.listening.Equal(now) {
		t.Fatalf("after 40 s without a pass, listening is %s, want %s", r.listening, now)
	}
	if got := r.since(now.Add(-30 * time.Second)); !got.Equal(now) {
		t.Fatalf("a deadline from T0 30 s ago counts from %s, want from now", got)
	}
}
