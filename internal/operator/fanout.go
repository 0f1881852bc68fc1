package operator

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// fanOutWidth is how many per-node writes a change has in flight at once: a
// change writes every node's state a few times, and one at a time that is
// minutes at thousands of nodes; the API server's priority and fairness
// queues what it cannot take at once.
const fanOutWidth = 16

// writePace remembers how long one per-node write took in the latest fan-out,
// from which a change's T0 lead is sized. The zero value knows nothing yet.
type writePace struct {
	mu      sync.Mutex
	perNode time.Duration
}

// fanOut runs write for every name, fanOutWidth at once, and returns the
// first error (the writes already started run to their end). It times the
// fan-out into pace when pace is not nil.
func fanOut(ctx context.Context, names []string, pace *writePace, write func(ctx context.Context, name string) error) error {
	if len(names) == 0 {
		return nil
	}
	start := time.Now()
	next := make(chan string)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(fanOutWidth, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				if err := write(ctx, n); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, n := range names {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		next <- n
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = fmt.Errorf("%d writes, one per node: %w", len(names), ctx.Err())
	}
	// A fan-out narrower than its width times one write, not one write's share of it.
	if pace != nil && first == nil && len(names) >= 4*fanOutWidth {
		pace.mu.Lock()
		pace.perNode = time.Since(start) / time.Duration(len(names))
		pace.mu.Unlock()
	}
	return first
}

// lead is how far ahead of now T0 goes for plans written to nodes nodes
// each (a rollback's): at least min, plus twice what writing every node's
// plan took in the latest fan-out of at least four times its width (T0
// reaches the agents in one such fan-out), or, before any was measured,
// unmeasuredWrite a node.
func (p *writePace) lead(minimum time.Duration, nodes int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	perNode := p.perNode
	if perNode == 0 {
		perNode = unmeasuredWrite
	}
	return minimum + 2*perNode*time.Duration(nodes)
}

// unmeasuredWrite is what a per-node write is taken to cost before one
// fan-out was measured: about what one took on the 2-core machine of the
// scale runs (some 180 writes a second at 1,000 nodes, docs/scale.md). Too long costs a few seconds; too short,
// steps run late on the nodes whose plan came after T0.
const unmeasuredWrite = 5 * time.Millisecond

// passPacer spaces a controller's passes: a pass that reads every node would
// otherwise run back to back on a burst of events. The next pass waits as long
// as the last one took, at most maxPassWait (a pass that wrote every node
// took long for its writes, not its reads), and takes every event of the wait
// at once. The zero value lets the first pass run at once.
type passPacer struct {
	lastEnd  time.Time
	lastTook time.Duration
}

// maxPassWait bounds how long a pass waits after the last one.
const maxPassWait = 500 * time.Millisecond

// wait is how long the next pass must still wait (0: run it now).
func (p *passPacer) wait() time.Duration {
	return max(min(p.lastTook, maxPassWait)-time.Since(p.lastEnd), 0)
}

// ran records a pass that began at began and ends now, and returns how long it took.
func (p *passPacer) ran(began time.Time) time.Duration {
	p.lastEnd, p.lastTook = time.Now(), time.Since(began)
	return p.lastTook
}
