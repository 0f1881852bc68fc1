package netdev

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
)

// getNetns opens a network namespace by reference: an absolute path (a
// sandbox's namespace as its container runtime names it) or the name of one
// under /run/netns. A name is one path element: it cannot climb out of
// /run/netns.
func getNetns(ref string) (netns.NsHandle, error) {
	if filepath.IsAbs(ref) {
		return netns.GetFromPath(ref)
	}
	if ref == "" || ref == "." || ref == ".." || strings.ContainsRune(ref, '/') {
		return netns.None(), fmt.Errorf("%q is not a network namespace name (one path element under /run/netns) nor an absolute path", ref)
	}
	return netns.GetFromName(ref)
}

// InNetns runs fn on a thread that has entered a network namespace (a name
// under /run/netns or an absolute path; "" is the caller's own). Sockets fn opens belong to that namespace for their whole life, so one
// process in the root namespace can serve and dial inside every pod, as the
// probe does.
func InNetns(name string, fn func() error) error {
	if name == "" { // the caller's own namespace, as Open("") is
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := getNetns(name)
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
