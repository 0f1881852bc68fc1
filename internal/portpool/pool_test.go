package portpool

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

var key = Key{Project: "p", Network: "n", Host: "h", SecurityGroups: "sg"}

func ports(ids ...string) []Port {
	var out []Port
	for _, id := range ids {
		out = append(out, Port{ID: id})
	}
	return out
}

func TestTakeHandsOutTheNewest(t *testing.T) {
	p := NewPool(key)
	t0 := time.Unix(1000, 0)
	p.Return(t0, ports("old")...)
	p.Return(t0.Add(time.Minute), ports("new")...)
	got, ok := p.Take("ns/a")
	if !ok || got.ID != "new" || p.InUse["new"].Owner != "ns/a" {
		t.Fatalf("Take = %+v, %v; want the most recently returned", got, ok)
	}
	p.Take("ns/b")
	if _, ok := p.Take("ns/c"); ok || !p.Demand {
		t.Fatal("an empty pool handed out a port, or did not record the demand")
	}
	p.Untake("new")
	if c := p.Counts(); c.Ready != 1 || c.InUse != 1 {
		t.Fatalf("after Untake: %+v", c)
	}
	if _, ok := p.Release("old"); !ok || len(p.Recycling) != 1 {
		t.Fatalf("Release: %+v", p.Counts())
	}
	if _, ok := p.Release("old"); ok {
		t.Fatal("released twice")
	}
	p.Remove("old")
	if len(p.Recycling) != 0 || len(p.Ready) != 1 {
		t.Fatalf("Remove left %+v", p.Counts())
	}
}

func TestRefill(t *testing.T) {
	s := Settings{MinReady: 5, Batch: 10, MaxSize: 0}
	for _, tc := range []struct {
		name string
		c    Counts
		s    Settings
		want int
	}{
		{"full enough", Counts{Ready: 5}, s, 0},
		{"below the minimum", Counts{Ready: 4}, s, 10},
		{"a batch in flight counts", Counts{Ready: 0, Creating: 10}, s, 0},
		{"capped by the maximum", Counts{Ready: 1, InUse: 15}, Settings{MinReady: 5, Batch: 10, MaxSize: 20}, 4},
		{"at the maximum", Counts{Ready: 0, InUse: 20}, Settings{MinReady: 5, Batch: 10, MaxSize: 20}, 0},
		{"no minimum, no demand", Counts{}, Settings{MinReady: 0, Batch: 3}, 0},
		{"no minimum, but a request found it empty", Counts{Demand: true}, Settings{MinReady: 0, Batch: 3}, 3},
	} {
		if got := Refill(tc.c, tc.s); got != tc.want {
			t.Errorf("%s: Refill(%+v) = %d, want %d", tc.name, tc.c, got, tc.want)
		}
	}
	if !KeepRecycled(Counts{InUse: 19}, Settings{MaxSize: 20}) || KeepRecycled(Counts{InUse: 20}, Settings{MaxSize: 20}) || !KeepRecycled(Counts{InUse: 999}, Settings{}) {
		t.Error("KeepRecycled")
	}
}

func TestExpire(t *testing.T) {
	now := time.Unix(10000, 0)
	ready := []Port{{ID: "a", IdleSince: now.Add(-3 * time.Hour)}, {ID: "b", IdleSince: now.Add(-2 * time.Hour)},
		{ID: "c", IdleSince: now.Add(-time.Minute)}, {ID: "d", IdleSince: now.Add(-4 * time.Hour)}}
	s := Settings{MinReady: 1, IdleTimeout: time.Hour}
	if got := Expire(ready, s, now); !reflect.DeepEqual(got, []string{"d", "a", "b"}) {
		t.Fatalf("Expire = %v, want the idle ones oldest first", got)
	}
	s.MinReady = 2
	if got := Expire(ready, s, now); !reflect.DeepEqual(got, []string{"d", "a"}) {
		t.Fatalf("Expire = %v, want two left", got)
	}
	if got := Expire(ready, Settings{MinReady: 0}, now); got != nil {
		t.Fatalf("no idle timeout: %v", got)
	}
}

func TestFreeSegmentationIDs(t *testing.T) {
	got, err := FreeSegmentationIDs([]int{1, 2, 4}, 3)
	if err != nil || !reflect.DeepEqual(got, []int{3, 5, 6}) {
		t.Fatalf("FreeSegmentationIDs = %v, %v", got, err)
	}
	used := make([]int, 0, MaxSegmentationID)
	for i := MinSegmentationID; i < MaxSegmentationID; i++ {
		used = append(used, i)
	}
	if _, err := FreeSegmentationIDs(used, 2); err == nil {
		t.Fatal("a full trunk gave out IDs")
	}
}

// TestPoolNeverOverTheMaximum drives a pool with random requests, releases,
// refills and recycles and checks, after every step, that no port is held by
// two owners, that the pool is never over its maximum, and that nothing is
// lost: every port created is ready, in use, recycling or deleted.
func TestPoolNeverOverTheMaximum(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for run := 0; run < 200; run++ {
		s := Settings{MinReady: rng.Intn(5), Batch: 1 + rng.Intn(6), MaxSize: rng.Intn(3) * (5 + rng.Intn(10)), IdleTimeout: time.Minute, RecyclePeriod: time.Second, MaxConcurrentCreates: 1}
		if s.MaxSize > 0 && s.MaxSize < s.MinReady {
			s.MaxSize = s.MinReady
		}
		p := NewPool(key)
		created, deleted := 0, 0
		now := time.Unix(0, 0)
		var inFlight []int
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(rng.Intn(30)) * time.Second)
			switch rng.Intn(5) {
			case 0:
				p.Take(fmt.Sprintf("ns/pod-%d", step))
			case 1:
				for id := range p.InUse {
					p.Release(id)
					break
				}
			case 2:
				if n := Refill(p.Counts(), s); n > 0 {
					p.Creating += n
					p.Demand = false
					inFlight = append(inFlight, n)
				}
			case 3:
				if len(inFlight) > 0 {
					n := inFlight[0]
					inFlight = inFlight[1:]
					p.Creating -= n
					for i := 0; i < n; i++ {
						created++
						p.Return(now, Port{ID: fmt.Sprintf("port-%d", created)})
					}
				}
			case 4:
				for _, port := range append([]Port(nil), p.Recycling...) {
					p.Remove(port.ID)
					if KeepRecycled(p.Counts(), s) {
						p.Return(now, port)
					} else {
						deleted++
					}
				}
				expired := Expire(p.Ready, s, now)
				p.Remove(expired...)
				deleted += len(expired)
			}
			c := p.Counts()
			if s.MaxSize > 0 && c.Total() > s.MaxSize {
				t.Fatalf("run %d step %d: %+v over the maximum %d", run, step, c, s.MaxSize)
			}
			if created != c.Ready+c.InUse+c.Recycling+deleted {
				t.Fatalf("run %d step %d: %d created, %+v, %d deleted: a port was lost", run, step, created, c, deleted)
			}
			seen := map[string]bool{}
			for _, q := range p.Ready {
				if seen[q.ID] || p.InUse[q.ID].Owner != "" {
					t.Fatalf("run %d step %d: port %s ready twice or also in use", run, step, q.ID)
				}
				seen[q.ID] = true
			}
		}
	}
}
