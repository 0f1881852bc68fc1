package testenv

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// recentLogs keeps the last lines the controllers logged, so a failed test can
// show what the operator and agents did before it failed: CI runs without
// NETSHIFT_TEST_LOGS, and a failure it cannot reproduce is otherwise mute.
type recentLogs struct {
	mu      sync.Mutex
	lines   []string // a ring of at most max lines
	next    int
	written int // lines ever written: a test's mark
	partial bytes.Buffer
	max     int
	tests   sync.Map // the tests that asked for the lines: testing.TB → true
}

var logs = &recentLogs{max: 4000}

func (r *recentLogs) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial.Write(p)
	for {
		line, err := r.partial.ReadString('\n')
		if err != nil { // no newline yet: keep the rest for the next write
			rest := line
			r.partial.Reset()
			r.partial.WriteString(rest)
			return len(p), nil
		}
		r.add(strings.TrimSuffix(line, "\n"))
	}
}

func (r *recentLogs) add(line string) {
	if len(r.lines) < r.max {
		r.lines = append(r.lines, line)
	} else {
		r.lines[r.next] = line
	}
	r.next = (r.next + 1) % r.max
	r.written++
}

func (r *recentLogs) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written
}

// since returns the kept lines written after mark, the oldest first.
func (r *recentLogs) since(mark int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(r.written-mark, len(r.lines))
	out := make([]string, 0, n)
	for i := len(r.lines) - n; i < len(r.lines); i++ {
		out = append(out, r.lines[(r.next+i)%len(r.lines)])
	}
	return out
}

// LogsOnFailure prints, when t fails, the controllers' log lines written
// while it ran (the last few thousand). Tests of one package share the
// logger, so lines of a test running in parallel may be among them.
// Calling it again for the same test changes nothing.
func LogsOnFailure(t testing.TB) {
	if _, seen := logs.tests.LoadOrStore(t, true); seen {
		return
	}
	m := logs.mark()
	t.Cleanup(func() {
		logs.tests.Delete(t)
		if !t.Failed() {
			return
		}
		lines := logs.since(m)
		t.Logf("the controllers' last %d log lines while the test ran:\n%s", len(lines), strings.Join(lines, "\n"))
	})
}
