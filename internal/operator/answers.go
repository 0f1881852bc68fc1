package operator

import (
	"sync"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// answerClock remembers when the nodes' answers to a change, in one of its
// phases, last grew in number. The zero value is ready to use.
type answerClock struct {
	mu    sync.Mutex
	key   string
	count int
	at    time.Time
}

// last is when the answers in reports last grew in number, now if they just
// did; zero before any answer of the change's phase was seen.
func (c *answerClock) last(ch *v1alpha1.NetworkChange, reports map[string]*v1alpha1.LiveChangeReport, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := ch.ID + "/" + string(ch.Phase)
	n := livechange.Answered(ch.Phase, reports)
	if key != c.key {
		c.key, c.count, c.at = key, 0, time.Time{}
	}
	if n > c.count {
		c.count, c.at = n, now
	}
	return c.at
}
