package portpool

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRecover(t *testing.T) {
	other := Key{Project: "p", Network: "n", Trunk: "parent-1", SecurityGroups: "sg"}
	found := []Found{
		{Port: Port{ID: "a"}, Key: key, Clean: true},
		{Port: Port{ID: "b"}, Key: key, Clean: false}, // its pod was deleted while the manager was down
		{Port: Port{ID: "c"}, Key: key, Clean: false}, // owned
		{Port: Port{ID: "d"}, Key: Key{Project: "p", Network: "n"}},
		{Port: Port{ID: "e", SegmentationID: 7}, Key: other, Clean: true},
	}
	owners := map[string]string{"c": "ns/web-1", "gone": "ns/web-2"}
	r := Recover(found, owners, Settings{MaxSize: 0})
	if !reflect.DeepEqual(r.Ready[key], []Port{{ID: "a"}}) || !reflect.DeepEqual(r.Recycle[key], []Port{{ID: "b"}}) {
		t.Fatalf("free ports: ready %v, recycle %v", r.Ready, r.Recycle)
	}
	if !reflect.DeepEqual(r.InUse[key], []Owned{{Port: Port{ID: "c"}, Owner: "ns/web-1"}}) {
		t.Fatalf("in use: %v", r.InUse)
	}
	if len(r.Delete) != 1 || !strings.Contains(r.Delete["d"], "belongs to no pool") {
		t.Fatalf("delete: %v, want only the port of no pool", r.Delete)
	}
	if r.Ready[other][0].SegmentationID != 7 {
		t.Fatalf("trunk pool: %v", r.Ready[other])
	}
	if !reflect.DeepEqual(r.Missing, map[string]string{"ns/web-2": "gone"}) {
		t.Fatalf("missing: %v", r.Missing)
	}
	capped := Recover(found, owners, Settings{MaxSize: 2})
	if len(capped.Ready[key])+len(capped.Recycle[key]) != 1 || !strings.Contains(capped.Delete["b"], "at its maximum of 2") {
		t.Fatalf("over the maximum: ready %v recycle %v delete %v", capped.Ready, capped.Recycle, capped.Delete)
	}
	if len(capped.InUse[key]) != 1 {
		t.Fatal("a port a live pod owns is never deleted, whatever the maximum")
	}
}

func TestLedgerCoalesces(t *testing.T) {
	var l Ledger
	t0 := time.Unix(100, 0)
	l.Set("p1", Bookkeeping{Name: "ns/a", DeviceID: "uid-a"}, t0)
	l.Set("p1", Bookkeeping{Name: AvailableName}, t0.Add(time.Second)) // released before the update went
	l.Set("p2", Bookkeeping{Name: "ns/b", DeviceID: "uid-b"}, t0)
	if got := l.Due(t0); !reflect.DeepEqual(got, []Update{{PortID: "p2", Bookkeeping: Bookkeeping{Name: "ns/b", DeviceID: "uid-b"}}}) {
		t.Fatalf("due at t0: %+v", got)
	}
	l.Set("p1", Bookkeeping{Name: "ns/c", DeviceID: "uid-c"}, t0.Add(2*time.Second)) // reused: one update, the new owner's
	if b, _ := l.Pending("p1"); b.Name != "ns/c" || l.Len() != 1 {
		t.Fatalf("pending %+v, %d", b, l.Len())
	}
	l.Set("p3", Bookkeeping{Name: "x"}, t0.Add(time.Hour))
	l.Drop("p3")
	if got := l.Due(time.Time{}); len(got) != 1 || got[0].Name != "ns/c" || l.Len() != 0 {
		t.Fatalf("flush all: %+v", got)
	}
}
