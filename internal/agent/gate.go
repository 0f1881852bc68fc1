package agent

import "sync"

// offGate serializes everything that writes netshift's files on the node
// (netshift-cni's chaining, the pool namespaces' list, the configuration's
// lock) with `netshift uninstall` taking them off, and once they are off
// keeps anything from writing them again: a write in flight when the
// uninstall starts finishes first, and is then undone with the rest.
type offGate struct {
	mu  sync.Mutex
	off bool
}

// do runs write unless netshift is off the node; ran says whether it did.
// A nil gate (an agent built by hand, in tests) lets everything through.
func (g *offGate) do(write func() error) (ran bool, err error) {
	if g == nil {
		return true, write()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off {
		return false, nil
	}
	return true, write()
}

// takeOff marks netshift off the node and runs remove, with no write in between.
func (g *offGate) takeOff(remove func() error) error {
	if g == nil {
		return remove()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.off = true
	return remove()
}

// putBack lets the writers in again (spec.uninstall was withdrawn); it says
// whether netshift was off.
func (g *offGate) putBack() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.off
	g.off = false
	return was
}
