package nodenet

import (
	"context"
	"sync"

	"netshift.io/netshift/internal/netdev"
)

// Handles are netlink handles kept open by network namespace while a
// step is armed: opening one means entering the namespace, which an armed
// step does before its time, so that at its time it only sends requests.
type Handles struct {
	mu   sync.Mutex
	open map[string]*netdev.Handle
}

func NewHandles() *Handles { return &Handles{open: map[string]*netdev.Handle{}} }

// Get returns the namespace's handle, opening it if it is not open yet.
func (hs *Handles) Get(netns string) (*netdev.Handle, error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h, ok := hs.open[netns]; ok {
		return h, nil
	}
	h, err := netdev.Open(netns)
	if err != nil {
		return nil, err
	}
	hs.open[netns] = h
	return h, nil
}

// Close closes every handle.
func (hs *Handles) Close() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range hs.open {
		h.Close()
	}
	hs.open = map[string]*netdev.Handle{}
}

type handlesKey struct{}

// WithHandles gives a step's work the handles armed for it.
func WithHandles(ctx context.Context, hs *Handles) context.Context {
	return context.WithValue(ctx, handlesKey{}, hs)
}

// SetMTU sets a link's MTU in a namespace, through the step's armed handle
// when it has one, else a handle opened for this call.
func SetMTU(ctx context.Context, netns, link string, mtu int) error {
	if hs, ok := ctx.Value(handlesKey{}).(*Handles); ok {
		h, err := hs.Get(netns)
		if err != nil {
			return err
		}
		return h.SetMTU(link, mtu)
	}
	h, err := netdev.Open(netns)
	if err != nil {
		return err
	}
	defer h.Close()
	return h.SetMTU(link, mtu)
}

// LinkMTU reads a link's MTU in a network namespace ("": this process's own).
func LinkMTU(netns, link string) (int, error) {
	h, err := netdev.Open(netns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	return h.MTU(link)
}
