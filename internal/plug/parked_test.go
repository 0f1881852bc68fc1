package plug

import (
	"slices"
	"testing"
	"time"
)

func portIDs(pl []Plugged) []string {
	var ids []string
	for _, p := range pl {
		ids = append(ids, p.PortID)
	}
	return ids
}

func TestMayPark(t *testing.T) {
	at := time.Unix(100, 0)
	live := Plugged{PortID: "live", Owner: "ns/a"}
	parked := func(id string) Plugged { return Plugged{PortID: id, ParkedAt: at} }
	cases := []struct {
		name    string
		plugged []Plugged
		max     int
		want    bool
	}{
		{"parking off", nil, 0, false},
		{"room left", []Plugged{live, parked("a")}, 2, true},
		{"live ports do not count", []Plugged{live, live, live}, 1, true},
		{"full", []Plugged{parked("a"), parked("b")}, 2, false},
	}
	for _, c := range cases {
		if got := MayPark(c.plugged, c.max); got != c.want {
			t.Errorf("%s: MayPark = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParkedToSweep(t *testing.T) {
	now := time.Unix(1000, 0)
	ago := func(id string, d time.Duration) Plugged { return Plugged{PortID: id, ParkedAt: now.Add(-d)} }
	live := Plugged{PortID: "live", Owner: "ns/a"}
	cases := []struct {
		name    string
		plugged []Plugged
		max     int
		want    []string
	}{
		{"nothing parked", []Plugged{live}, 4, nil},
		{"young ones stay", []Plugged{live, ago("a", time.Second), ago("b", 59*time.Second)}, 4, nil},
		{"a minute is the limit", []Plugged{ago("a", time.Minute), ago("b", time.Second)}, 4, []string{"a"}},
		{"over the maximum: the oldest go", []Plugged{ago("c", 1*time.Second), ago("a", 3*time.Second), ago("b", 2*time.Second)}, 1, []string{"a", "b"}},
		{"parking turned off: all go", []Plugged{ago("a", time.Second), ago("b", 2*time.Second)}, 0, []string{"b", "a"}},
		{"both reasons, each once", []Plugged{ago("old", 2*time.Minute), ago("a", 2*time.Second), ago("b", time.Second)}, 1, []string{"old", "a"}},
	}
	for _, c := range cases {
		if got := portIDs(ParkedToSweep(c.plugged, now, time.Minute, c.max)); !slices.Equal(got, c.want) {
			t.Errorf("%s: sweep %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUnplugDeferral(t *testing.T) {
	gone := time.Unix(1000, 0)
	grace := 30 * time.Second
	cases := []struct {
		name          string
		wired, exists bool
		since         time.Duration
		want          time.Duration
	}{
		{"a port netshift-cni did not wire", false, false, 0, 0},
		{"a port netshift-cni did not wire, pod terminating", false, true, 0, 0},
		{"wired, pod terminating: asked again later", true, true, time.Hour, grace},
		{"wired, pod deleted 10 s ago", true, false, 10 * time.Second, 20 * time.Second},
		{"wired, the DEL never came", true, false, grace, 0},
	}
	for _, c := range cases {
		if got := UnplugDeferral(c.wired, c.exists, gone, gone.Add(c.since), grace); got != c.want {
			t.Errorf("%s: waits %s, want %s", c.name, got, c.want)
		}
	}
}

func TestStaleLeavesParkedPorts(t *testing.T) {
	plugged := []Plugged{{PortID: "a", Owner: "ns/a"}, {PortID: "p", ParkedAt: time.Unix(1, 0)}}
	if got := portIDs(Stale(plugged, nil)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("stale = %v, want only a (p is parked, nobody's)", got)
	}
}

func TestPlugOf(t *testing.T) {
	plugged := []Plugged{{PortID: "a", Owner: "ns/a"}, {PortID: "b", ParkedAt: time.Unix(1, 0)}}
	if pl, ok := PlugOf(plugged, "a"); !ok || pl.Owner != "ns/a" {
		t.Errorf("PlugOf(a) = %+v, %v", pl, ok)
	}
	if pl, ok := PlugOf(plugged, "b"); !ok || !pl.Parked() {
		t.Errorf("PlugOf(b) = %+v, %v; want the parked plug", pl, ok)
	}
	if _, ok := PlugOf(plugged, "c"); ok {
		t.Error("PlugOf(c) found a port that is not plugged")
	}
}
