package operator

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"
)

// TimeServer serves the operator's clock at /time, so agents can measure
// their own clock's offset from it (T0 only means the same instant on every
// node if their clocks agree). It runs on the leader only: the leader's clock
// is the one T0 is set by.
type TimeServer struct {
	Addr string
	// Now is the clock served (time.Now; tests may skew it).
	Now func() time.Time
	// Bound, when set, receives the address actually bound (for ":0").
	Bound chan<- string
}

// TimeResponse is the body of /time.
type TimeResponse struct {
	UnixNano int64 `json:"unixNano"`
}

// Start serves until ctx ends (a controller-runtime Runnable).
func (s *TimeServer) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	if s.Bound != nil {
		s.Bound <- l.Addr().String()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/time", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(TimeResponse{UnixNano: s.Now().UnixNano()})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NeedLeaderElection makes it run on the leader only.
func (s *TimeServer) NeedLeaderElection() bool { return true }
