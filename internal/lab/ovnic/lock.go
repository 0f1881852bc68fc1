package ovnic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"netshift.io/netshift/internal/lab/poll"
)

// lock serializes the lab's actuations of one thing (a node's move, the
// central zone). A plugin pod killed mid-command leaves its command
// running; the restarted one runs it again, and that second run must wait for
// the first to end rather than interleave with it, then finds the work done.
func (ic *Interconnect) lock(ctx context.Context, what string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(ic.Dir, what+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = poll.Until(ctx, 50*time.Millisecond, 5*time.Minute, func(context.Context) (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	}, func() error { return fmt.Errorf("%s: another run still holds %s after 5 minutes", what, f.Name()) })
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
