package agent

import (
	"context"
	"sync"

	"netshift.io/netshift/internal/netdev"
)

// netnsHandles are netlink handles kept open by network namespace while a
// step is armed: opening one means entering the namespace, which an armed
// step does before its time, so that at its time it only sends requests.
type netnsHandles struct {
	mu   sync.Mutex
	open map[string]*netdev.Handle
}

func newNetnsHandles() *netnsHandles { return &netnsHandles{open: map[string]*netdev.Handle{}} }

// get returns the namespace's handle, opening it if it is not open yet.
func (hs *netnsHandles) get(netns string) (*netdev.Handle, error) {
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

func (hs *netnsHandles) close() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, h := range hs.open {
		h.Close()
	}
	hs.open = map[string]*netdev.Handle{}
}

type handlesKey struct{}

// withHandles gives a step's work the handles armed for it.
func withHandles(ctx context.Context, hs *netnsHandles) context.Context {
	return context.WithValue(ctx, handlesKey{}, hs)
}

// setMTU sets a link's MTU in a namespace, through the step's armed handle
// when it has one, else a handle opened for this call.
func setMTU(ctx context.Context, netns, link string, mtu int) error {
	if hs, ok := ctx.Value(handlesKey{}).(*netnsHandles); ok {
		h, err := hs.get(netns)
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
