package hold

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)

func h(k v1alpha1.HoldKind, id string, cordon bool) v1alpha1.NodeHold {
	return v1alpha1.NodeHold{Kind: k, ID: id, Cordon: cordon}
}

// TestAZoneMoveAndADrainOnOneNode is the case three controllers got wrong
// each on its own: the second holder finds the node cordoned by the first,
// and the first to finish must not uncordon a node the other still needs.
func TestAZoneMoveAndADrainOnOneNode(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	if c := Take(&s, h(v1alpha1.HoldZoneMove, "node-1", true), false, t0); c != Set || !s.CordonedByNetshift {
		t.Fatalf("the first hold on a schedulable node: %v, owned %v; want Set and owned", c, s.CordonedByNetshift)
	}
	if c := Take(&s, h(v1alpha1.HoldDrain, "op-1", true), true, t0); c != Leave || !s.CordonedByNetshift {
		t.Fatalf("a second hold on the node netshift cordoned: %v, owned %v; want Leave, still owned", c, s.CordonedByNetshift)
	}
	if c := Release(&s, v1alpha1.HoldZoneMove, "", true); c != Leave || !s.CordonedByNetshift {
		t.Fatalf("the move ends while the drain holds the node: %v, owned %v; want the cordon left", c, s.CordonedByNetshift)
	}
	if c := Release(&s, v1alpha1.HoldDrain, "op-1", true); c != Lift || s.CordonedByNetshift || len(s.Holds) != 0 {
		t.Fatalf("the last hold ends: %v, owned %v, holds %v; want Lift, not owned, no hold", c, s.CordonedByNetshift, s.Holds)
	}
}

func TestSomeoneElsesCordonStaysTheirs(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	if c := Take(&s, h(v1alpha1.HoldDrain, "op-1", true), true, t0); c != Leave || s.CordonedByNetshift {
		t.Fatalf("a hold on a node cordoned by someone else: %v, owned %v; want Leave, not owned", c, s.CordonedByNetshift)
	}
	if c := Release(&s, v1alpha1.HoldDrain, "", true); c != Leave {
		t.Fatalf("its end: %v; want the cordon left to its owner", c)
	}
}

func TestReleaseOfAnotherHoldersIDKeepsTheHold(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	Take(&s, h(v1alpha1.HoldLiveChange, "mtu-2-1", true), false, t0)
	if c := Release(&s, v1alpha1.HoldLiveChange, "mtu-3-1", true); c != Leave || len(s.Holds) != 1 {
		t.Fatalf("a finished change released another change's hold: %v, holds %v", c, s.Holds)
	}
}

func TestTakeAgainKeepsSinceAndOneHoldPerKind(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	Take(&s, h(v1alpha1.HoldDrain, "op-1", true), false, t0)
	Take(&s, h(v1alpha1.HoldDrain, "op-1", true), true, t0.Add(time.Minute))
	if len(s.Holds) != 1 || !s.Holds[0].Since.Time.Equal(t0) {
		t.Fatalf("holds %+v: want one, held since %s", s.Holds, t0)
	}
	Take(&s, h(v1alpha1.HoldDrain, "op-2", true), true, t0.Add(2*time.Minute))
	if len(s.Holds) != 1 || s.Holds[0].ID != "op-2" || !s.Holds[0].Since.Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("holds %+v: want op-2's alone, since its own time", s.Holds)
	}
}

func TestLiveChangeTakesNoSlot(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	Take(&s, h(v1alpha1.HoldLiveChange, "mtu-2-1", true), false, t0)
	if Busy(s) {
		t.Fatal("a live change's hold counts against the pool: every node takes part at once")
	}
	Take(&s, h(v1alpha1.HoldZoneMove, "node-1", true), true, t0)
	if !Busy(s) || Busy(s, v1alpha1.HoldZoneMove) {
		t.Fatalf("busy %v, busy besides the move %v; want true, false", Busy(s), Busy(s, v1alpha1.HoldZoneMove))
	}
	if got := Count(map[string]string{"a": "p"}, map[string]v1alpha1.NetshiftNodeStateStatus{"a": s, "gone": s}); got["p"] != 1 || len(got) != 1 {
		t.Fatalf("count %v: want p:1, and nothing for a node with no pool", got)
	}
}

// TestPropertyTheCordonFollowsTheHolds runs random sequences of holds taken
// and given back by the three kinds (some releases naming a holder that is
// not the one holding), with a person cordoning an idle node or lifting
// netshift's cordon by hand in between, and checks after every step what a
// cluster operator relies on: once a hold has been taken or given back, a
// node held for a cordoning hold is cordoned; netshift lifts only a cordon it
// set; once no hold needs it, netshift's cordon is gone and netshift owns
// none; and a cordon someone else set before netshift came is still there
// at the end.
func TestPropertyTheCordonFollowsTheHolds(t *testing.T) {
	kinds := []v1alpha1.HoldKind{v1alpha1.HoldDrain, v1alpha1.HoldZoneMove, v1alpha1.HoldLiveChange}
	for seed := int64(0); seed < 5000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var s v1alpha1.NetshiftNodeStateStatus
		theirs := rng.Intn(3) == 0 // cordoned by someone else before any hold
		unschedulable := theirs
		var trace []string
		fail := func(format string, args ...any) {
			t.Fatalf("seed %d after %v: %s", seed, trace, fmt.Sprintf(format, args...))
		}
		for step := 0; step < 14; step++ {
			k := kinds[rng.Intn(len(kinds))]
			ownedBefore := s.CordonedByNetshift
			var c Cordon
			switch rng.Intn(5) {
			case 0, 1:
				cordon := rng.Intn(4) != 0
				c = Take(&s, h(k, fmt.Sprint("id-", rng.Intn(2)), cordon), unschedulable, t0)
				trace = append(trace, fmt.Sprintf("take %s cordon=%v", k, cordon))
			case 2, 3:
				id := []string{"", "id-0", "id-1"}[rng.Intn(3)]
				held, _ := Of(s, k)
				c = Release(&s, k, id, unschedulable)
				trace = append(trace, fmt.Sprintf("release %s %q", k, id))
				if _, still := Of(s, k); still && held.ID != "" && (id == "" || id == held.ID) {
					fail("the hold of %s by %s outlived its release", k, held.ID)
				}
			default:
				switch {
				case unschedulable && s.CordonedByNetshift:
					unschedulable = false // a person lifts netshift's cordon by hand
					trace = append(trace, "person uncordons")
				case !theirs && !unschedulable && len(s.Holds) == 0:
					unschedulable, theirs = true, true // a person cordons an idle node: theirs from now on
					trace = append(trace, "person cordons")
				}
				continue
			}
			switch c {
			case Set:
				unschedulable = true
			case Lift:
				if !ownedBefore {
					fail("lifted a cordon netshift did not set")
				}
				unschedulable = false
			}
			need := false
			for _, x := range s.Holds {
				need = need || x.Cordon
			}
			if need && !unschedulable {
				fail("a hold needs the cordon and the node is schedulable")
			}
			if !need && s.CordonedByNetshift {
				fail("no hold needs the cordon and netshift still owns it")
			}
			if !need && ownedBefore && unschedulable && !theirs {
				fail("netshift's cordon outlived its last hold")
			}
		}
		for _, k := range kinds {
			if Release(&s, k, "", unschedulable) == Lift {
				unschedulable = false
			}
		}
		if theirs && !unschedulable {
			t.Fatalf("seed %d after %v: netshift lifted a cordon someone else set", seed, trace)
		}
		if !theirs && unschedulable {
			t.Fatalf("seed %d after %v: netshift left its cordon after every hold went", seed, trace)
		}
	}
}

// TestAdoptWhatAnOlderOperatorRecorded: the cordons and slots an older
// operator recorded in its own fields become holds, its cordons stay
// netshift's, and adopting twice changes nothing.
func TestAdoptWhatAnOlderOperatorRecorded(t *testing.T) {
	s := v1alpha1.NetshiftNodeStateStatus{DrainStatus: v1alpha1.DrainingComplete, DrainOperation: "op-1",
		ZoneCordoned: "node-1", LiveChangeCordoned: "mtu-2-1"}
	if !Adopt(&s, t0) {
		t.Fatal("nothing adopted")
	}
	var kinds []string
	for _, x := range s.Holds {
		kinds = append(kinds, fmt.Sprintf("%s %s %v", x.Kind, x.ID, x.Cordon))
	}
	want := "[Drain op-1 true ZoneMove node-1 true LiveChange mtu-2-1 true]"
	if fmt.Sprint(kinds) != want || !s.CordonedByNetshift || s.ZoneCordoned != "" || s.LiveChangeCordoned != "" {
		t.Fatalf("holds %v (want %s), owned %v, old fields %q %q", kinds, want, s.CordonedByNetshift, s.ZoneCordoned, s.LiveChangeCordoned)
	}
	if Adopt(&s, t0.Add(time.Hour)) {
		t.Fatal("a second adoption changed the state")
	}
	if c := Release(&s, v1alpha1.HoldZoneMove, "", true); c != Leave {
		t.Fatalf("the adopted move's end: %v, want the cordon kept for the drain and the change", c)
	}
	// A move an older operator started on a node someone else had cordoned: held, not owned.
	s = v1alpha1.NetshiftNodeStateStatus{ZoneRestart: &v1alpha1.ZoneRestart{Zone: "global"}}
	Adopt(&s, t0)
	if x, ok := Of(s, v1alpha1.HoldZoneMove); !ok || x.ID != "global" || s.CordonedByNetshift {
		t.Fatalf("holds %+v, owned %v: want a ZoneMove hold for global, the cordon not netshift's", s.Holds, s.CordonedByNetshift)
	}
}
