package testenv

import (
	"fmt"
	"slices"
	"testing"
)

func TestRecentLogsKeepTheLastLinesSinceAMark(t *testing.T) {
	r := &recentLogs{max: 3}
	fmt.Fprint(r, "a\nb")
	m := r.mark()
	fmt.Fprint(r, "c\nd\ne\nf\n") // "bc" completes the partial line
	if got, want := r.since(m), []string{"d", "e", "f"}; !slices.Equal(got, want) {
		t.Errorf("since mark: %q, want %q (the ring keeps 3)", got, want)
	}
	m = r.mark()
	fmt.Fprint(r, "g\n")
	if got, want := r.since(m), []string{"g"}; !slices.Equal(got, want) {
		t.Errorf("since the second mark: %q, want %q", got, want)
	}
	if got := r.since(r.mark()); len(got) != 0 {
		t.Errorf("nothing written since the mark, got %q", got)
	}
}
