package manager

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"netshift.io/netshift/internal/neutron"
)

// faultyNeutron stands between the manager and the real neutron-server and
// spoils chosen requests: answers 409 OverQuota or 503 without forwarding, or
// forwards and then holds the answer past the client's timeout (the request
// happened; the client cannot know).
type faultyNeutron struct {
	mu    sync.Mutex
	rules []fault
	seen  map[string]int
	// stalled are the batch tags of the creates whose answer was held back.
	stalled []string
}

type fault struct {
	method, path string // path: a substring of the URL path
	times        int    // how many matching requests to spoil
	status       int    // answer this without forwarding; 0: forward, then stall
	stall        time.Duration
}

func (f *faultyNeutron) handler(target string) http.Handler {
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		var hit *fault
		for i := range f.rules {
			rule := &f.rules[i]
			if rule.times > 0 && r.Method == rule.method && strings.Contains(r.URL.Path, rule.path) {
				rule.times--
				hit = rule
				break
			}
		}
		f.seen[r.Method+" "+r.URL.Path]++
		f.mu.Unlock()
		switch {
		case hit == nil:
			proxy.ServeHTTP(w, r)
		case hit.status != 0:
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(hit.status)
			body := `{"NeutronError": {"type": "HTTPServiceUnavailable", "message": "injected", "detail": ""}}`
			if hit.status == http.StatusConflict {
				body = `{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['port'].", "detail": ""}}`
			}
			_, _ = w.Write([]byte(body))
		default:
			body, _ := io.ReadAll(r.Body)
			if i := strings.Index(string(body), "netshift-batch="); i >= 0 {
				tag := string(body[i:])
				f.mu.Lock()
				f.stalled = append(f.stalled, tag[:strings.IndexByte(tag, '"')])
				f.mu.Unlock()
			}
			// Forwarded whatever the client does: the create happens even though its answer is lost.
			fwd := r.Clone(context.Background())
			fwd.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, fwd)
			time.Sleep(hit.stall)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		}
	})
}

// TestNeutronFaults: a bulk create refused over quota, then one whose answer
// never arrives in time, then port updates failing with 503: the manager backs
// off and retries, adopts the ports of the create that happened anyway, and in
// the end every tagged port is in the pool or owned, nothing leaked.
func TestNeutronFaults(t *testing.T) {
	f := newFixture(t)
	// The client's timeout leaves room for a real neutron-server on a busy
	// machine (the integration tier runs beside the labs); the stalled
	// answer comes well after it.
	const timeout = 4 * time.Second
	faults := &faultyNeutron{seen: map[string]int{}, rules: []fault{
		{method: "POST", path: "/v2.0/ports", times: 2, status: http.StatusConflict},
		{method: "POST", path: "/v2.0/ports", times: 1, stall: 3 * timeout},
		{method: "PUT", path: "/v2.0/ports/", times: 2, status: http.StatusServiceUnavailable},
	}}
	srv := httptest.NewServer(faults.handler(neutronServer.URL))
	t.Cleanup(srv.Close) // after the manager stops (cleanups run last first)
	nc, err := neutron.Connect(f.ctx, neutron.Options{URL: srv.URL, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	f.nc = nc
	m, _ := f.start(testSettings(), false)
	p := f.pod("patient")
	a := f.acquire(m, p) // waits through the quota refusals and the lost answer
	f.eventually("the port's bookkeeping, after the 503s", func() bool {
		port, err := f.nc.GetPort(f.ctx, a.ID)
		return err == nil && port.DeviceID == string(p.UID)
	})
	d, _ := m.Show(f.key)
	if d.LastError != "" {
		t.Errorf("the pool still reports an error after recovering: %s", d.LastError)
	}
	faults.mu.Lock()
	creates := faults.seen["POST /v2.0/ports"]
	faults.mu.Unlock()
	if creates < 3 {
		t.Fatalf("%d bulk creates reached the proxy: want the refused ones retried", creates)
	}
	faults.mu.Lock()
	stalled := append([]string(nil), faults.stalled...)
	faults.mu.Unlock()
	if len(stalled) != 1 {
		t.Fatalf("stalled creates: %v", stalled)
	}
	lost, err := f.nc.ListPorts(f.ctx, url.Values{"tags": {stalled[0]}})
	held := accounted(m)
	if err != nil || len(lost) == 0 {
		t.Fatalf("the create whose answer was lost made no ports (%v): the test did not test adoption", err)
	}
	for _, p := range lost {
		if held[p.ID] == "" {
			t.Errorf("port %s of the create whose answer was lost is not in the pool: leaked", p.ID)
		}
	}
	f.noLeak(m)
}
