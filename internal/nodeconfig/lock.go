package nodeconfig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Lock is a hold on a node's network configuration, shared or exclusive.
//
// netshift's CNI plugin holds it shared for the whole of a pod's ADD, and the
// agent holds it exclusively across a live MTU change's steps on the node: a
// pod is then either set up before the steps (and each step, which lists the
// node's pods, finds it) or after them (and reads the configuration the last
// step left), so no pod is missed. The lock is an flock on a file beside the configuration,
// because the configuration itself is replaced by a rename on every write.
type Lock struct{ f *os.File }

// LockPath is the lock file of the configuration at path.
func LockPath(path string) string { return path + ".lock" }

// LockShared takes the lock shared, waiting until ctx is done.
func LockShared(ctx context.Context, path string) (*Lock, error) {
	return lock(ctx, path, unix.LOCK_SH)
}

// LockExclusive takes the lock exclusively, waiting until ctx is done.
func LockExclusive(ctx context.Context, path string) (*Lock, error) {
	return lock(ctx, path, unix.LOCK_EX)
}

func lock(ctx context.Context, path string, how int) (*Lock, error) {
	lp := LockPath(path)
	if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
		return nil, fmt.Errorf("network configuration lock %s: %w", lp, err)
	}
	f, err := os.OpenFile(lp, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("network configuration lock %s: %w", lp, err)
	}
	// flock has no timeout: try without blocking, and again until ctx ends. Holders keep it
	// for milliseconds (a pod's ADD, a step), so a short poll costs nothing.
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("network configuration lock %s: %w", lp, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("network configuration lock %s: %w", lp, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// Unlock releases the lock. The kernel releases it too if the holder dies.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
