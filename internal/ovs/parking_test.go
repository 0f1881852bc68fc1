package ovs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
)

// A parked port keeps every row and its attachment (same interface, same
// ofport) and is nobody's; the next pod adopts it as it is; a sweep of a
// parked port that was adopted meanwhile is refused and changes nothing.
func TestParkAdoptAndSweep(t *testing.T) {
	for _, mode := range []plug.Mode{plug.PerPort, plug.Direct} {
		t.Run(string(mode), func(t *testing.T) {
			sw := ovstest.Start(t)
			ctx := context.Background()
			p := vmPort(portID)
			addTap(t, sw, p.Tap)
			if err := sw.DB.Plug(ctx, mode, p, "ns/first", false, "br-int", "netdev"); err != nil {
				t.Fatal(err)
			}
			waitOFPort(t, sw, p.Tap)
			side := p.Tap
			if mode == plug.PerPort {
				side = plug.NamesFor(portID).IntegrationPatch
			}
			ifaceBefore, portBefore := sw.Vsctl("get", "interface", side, "_uuid"), ofport(t, sw, side)
			names := sw.Vsctl("--columns=name", "list", "interface")

			pl, _ := sw.PluggedPort(portID)
			stale := pl
			stale.Owner = "ns/someone-else"
			if err := sw.DB.Park(ctx, stale, time.Unix(1000, 0)); !errors.Is(err, ovs.ErrPlugChanged) {
				t.Fatalf("parking a plug read for another owner: %v, want ErrPlugChanged", err)
			}
			if got, _ := sw.PluggedPort(portID); got.Parked() || got.Owner != "ns/first" {
				t.Fatalf("a refused park changed the plug: %+v", got)
			}
			if err := sw.DB.Park(ctx, pl, time.Unix(1000, 0)); err != nil {
				t.Fatal(err)
			}
			parked, ok := sw.PluggedPort(portID)
			if !ok || !parked.Parked() || parked.Owner != "" || !parked.ParkedAt.Equal(time.Unix(1000, 0)) || parked.Mode != mode {
				t.Fatalf("after park: %+v (found %v), want nobody's, parked at 1000", parked, ok)
			}
			if got := sw.Vsctl("--columns=name", "list", "interface"); got != names {
				t.Errorf("park changed the switch's interfaces:\n%s\nwas\n%s", got, names)
			}
			if sw.Vsctl("get", "interface", side, "_uuid") != ifaceBefore || ofport(t, sw, side) != portBefore {
				t.Errorf("park re-created or re-attached %s", side)
			}

			// The next pod adopts it: the same rows, its owner, parked no more.
			adm, err := plug.Admit(mode, []plug.Plugged{parked}, p, "ns/second")
			if err != nil || adm.Existing == nil {
				t.Fatalf("admission of the parked port's next pod: %+v, %v", adm, err)
			}
			if err := sw.DB.Plug(ctx, mode, p, "ns/second", adm.Isolate, "br-int", "netdev"); err != nil {
				t.Fatal(err)
			}
			adopted, _ := sw.PluggedPort(portID)
			if adopted.Parked() || adopted.Owner != "ns/second" {
				t.Fatalf("after adoption: %+v, want ns/second's, not parked", adopted)
			}
			if sw.Vsctl("get", "interface", side, "_uuid") != ifaceBefore || ofport(t, sw, side) != portBefore {
				t.Errorf("adoption re-created or re-attached %s", side)
			}
			if got, err := sw.DB.Interfaces(ctx, side); err != nil || got[side].UUID != ifaceBefore {
				t.Errorf("Interfaces reads %s's row as %q (%v), ovs-vsctl as %q", side, got[side].UUID, err, ifaceBefore)
			}
			// A sweep that read the port while it was parked must not take it from its new pod.
			if err := sw.DB.UnplugParked(ctx, parked, "br-int"); !errors.Is(err, ovs.ErrPlugChanged) {
				t.Fatalf("sweeping an adopted port: %v, want ErrPlugChanged", err)
			}
			if got, ok := sw.PluggedPort(portID); !ok || got.Owner != "ns/second" {
				t.Fatalf("a refused sweep changed the plug: %+v (found %v)", got, ok)
			}

			// Parked again and swept: everything Plug made is gone.
			if err := sw.DB.Park(ctx, adopted, time.Unix(2000, 0)); err != nil {
				t.Fatal(err)
			}
			again, _ := sw.PluggedPort(portID)
			if err := sw.DB.UnplugParked(ctx, again, "br-int"); err != nil {
				t.Fatal(err)
			}
			if _, ok := sw.PluggedPort(portID); ok {
				t.Fatal("the swept port is still plugged")
			}
		})
	}
}
