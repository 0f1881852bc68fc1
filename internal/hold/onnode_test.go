package hold

import (
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

// TestALiveChangeHoldOnTheNodeAndADrain: a drain takes the node a live
// change cordoned (its hold on the Node), finds it cordoned and takes it for
// someone else's; when the live change ends first, the cordon stays for the
// drain and becomes netshift's, so that the drain's end lifts it.
func TestALiveChangeHoldOnTheNodeAndADrain(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus // a node in service: the live change's hold went on the Node
	if c := Take(&s, h(v1alpha1.HoldDrain, "op-1", true), true, t0); c != Leave || s.CordonedByNetshift {
		t.Fatalf("the drain on the cordoned node: %v, owned %v; want Leave, not owned", c, s.CordonedByNetshift)
	}
	if r := ReleaseOnNode(&s); r.Uncordon || !r.Record || !s.CordonedByNetshift {
		t.Fatalf("the live change ends while the drain holds the node: %+v, owned %v; want the cordon kept, netshift's, recorded", r, s.CordonedByNetshift)
	}
	if r := ReleaseOnNode(&s); r.Uncordon || r.Record {
		t.Fatalf("the same release again (a crash after the record): %+v; want nothing more", r)
	}
	if c := Release(&s, v1alpha1.HoldDrain, "op-1", true); c != Lift || s.CordonedByNetshift {
		t.Fatalf("the drain ends: %v, owned %v; want Lift", c, s.CordonedByNetshift)
	}
}

func TestALiveChangeHoldOnTheNodeAlone(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	if r := ReleaseOnNode(&s); !r.Uncordon || r.Record {
		t.Fatalf("the only hold ends: %+v; want the uncordon in the same write, no state written", r)
	}
	s = v1alpha1.NetshiftNodeStateStatus{CordonedByNetshift: true}
	if r := ReleaseOnNode(&s); !r.Uncordon || !r.Record || s.CordonedByNetshift {
		t.Fatalf("a stale owner left: %+v, owned %v; want it cleared and the node uncordoned", r, s.CordonedByNetshift)
	}
	s = v1alpha1.NetshiftNodeStateStatus{Holds: []v1alpha1.NodeHold{h(v1alpha1.HoldDrain, "op-1", false)}}
	if r := ReleaseOnNode(&s); !r.Uncordon {
		t.Fatalf("a drain that needs no cordon: %+v; want the node uncordoned", r)
	}
}

// TestAnotherHoldAdoptsTheLiveChangesHoldOnTheNode: before a drain or a zone
// move takes or gives back a hold on a node a live change holds through its
// annotation, that hold moves into the state, the cordon netshift's: someone
// who lifted the cordon by hand does not make the drain's end lift it while
// the change still needs it.
func TestAnotherHoldAdoptsTheLiveChangesHoldOnTheNode(t *testing.T) {
	var s v1alpha1.NetshiftNodeStateStatus
	if !AdoptNode(&s, "mtu-2-1", t0) || !s.CordonedByNetshift {
		t.Fatalf("adopted: %+v; want the hold and the cordon netshift's", s)
	}
	if AdoptNode(&s, "mtu-2-1", t0) || AdoptNode(&s, "", t0) {
		t.Fatal("adopting again, or no annotation, changes nothing")
	}
	// The cordon was lifted by hand; a drain takes the node and cordons it again.
	if c := Take(&s, h(v1alpha1.HoldDrain, "op-1", true), false, t0); c != Set {
		t.Fatalf("a drain on the adopted node, uncordoned by hand: %v, want Set", c)
	}
	if c := Release(&s, v1alpha1.HoldDrain, "op-1", true); c != Leave {
		t.Fatalf("the drain ends while the live change holds the node: %v, want the cordon left", c)
	}
	if c := Release(&s, v1alpha1.HoldLiveChange, "mtu-2-1", true); c != Lift {
		t.Fatalf("the live change ends: %v, want Lift", c)
	}
}
