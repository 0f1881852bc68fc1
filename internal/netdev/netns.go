package netdev

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// InNetns runs fn on a thread that has entered the named network namespace.
// Sockets fn opens belong to that namespace for their whole life, so one
// process in the root namespace can serve and dial inside every pod, as the
// probe does.
func InNetns(name string, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", name, err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// This thread is in the wrong namespace: let it die with the goroutine rather than
		// return it to the scheduler (LockOSThread without Unlock does that).
		runtime.LockOSThread()
		return fmt.Errorf("return from network namespace %s: %w", name, err)
	}
	return ferr
}
