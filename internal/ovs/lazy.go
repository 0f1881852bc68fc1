package ovs

import (
	"context"
	"sync"
)

// lazyConn connects on first use and keeps the connection; a failed dial is
// tried again at the next use. The operator's OVN databases may be down when
// it starts: that is reported where they are used, not at start.
type lazyConn struct {
	mu sync.Mutex
	c  *conn
}

func (l *lazyConn) get(ctx context.Context, dial func(context.Context) (*conn, error)) (*conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		return l.c, nil
	}
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	l.c = c
	return c, nil
}

// Close ends the connection, if one was made.
func (l *lazyConn) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		l.c.close()
		l.c = nil
	}
}
