package ovs

import (
	"context"
	"syscall"
	"testing"

	"netshift.io/netshift/internal/ovs/model/vswitch"
	"netshift.io/netshift/internal/ovs/ovsmem"
)

// An armed transaction whose own connection broke before its time (the
// server restarted, say) is sent through the switch's connection instead:
// the change is made, and nothing is left open.
func TestArmedLineBrokenFallsBack(t *testing.T) {
	endpoint := ovsmem.StartSwitch(t)
	ctx := context.Background()
	sw, err := OpenSwitch(ctx, endpoint, NoWait())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	p, err := sw.PrepareMTURequest(1400, "br-int")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Arm(ctx); err != nil {
		t.Fatal(err)
	}
	if p.line == nil {
		t.Fatal("Arm opened no connection")
	}
	fd := p.line.fd
	var armed syscall.Stat_t
	if err := syscall.Fstat(fd, &armed); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Shutdown(fd, syscall.SHUT_RDWR); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(ctx); err != nil {
		t.Fatalf("commit over a broken line: %v", err)
	}
	if p.line != nil || p.Committed.IsZero() {
		t.Errorf("after the commit: line %v, committed %v", p.line, p.Committed)
	}
	// Closed: the descriptor is gone, or reused for another file.
	var now syscall.Stat_t
	if syscall.Fstat(fd, &now) == nil && now.Ino == armed.Ino {
		t.Errorf("the armed line's socket (descriptor %d) is still open", fd)
	}
	full, _ := vswitch.FullDatabaseModel()
	c := ovsmem.Client(t, endpoint, full)
	if _, err := c.MonitorAll(ctx); err != nil {
		t.Fatal(err)
	}
	i := vswitch.Interface{Name: "br-int"}
	if err := c.Get(ctx, &i); err != nil || i.MTURequest == nil || *i.MTURequest != 1400 {
		t.Fatalf("br-int mtu_request %v (%v), want 1400", i.MTURequest, err)
	}
}
