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
	"netshift.io/netshift/internal/portpool"
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
	// late holds the request this long before forwarding it: Neutron makes
	// the ports after the client has given up, and after its lookup.
	late time.Duration
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
			time.Sleep(hit.late)
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
// never arrives in time, then one Neutron carries out only after the client
// gave up and looked for its ports, then port updates failing with 503: the
// manager backs off and retries, adopts the ports of both creates that
// happened anyway (the late one's when they appear), and in the end every
// tagged port is in the pool or owned, nothing leaked.
func TestNeutronFaults(t *testing.T) {
	f := newFixture(t)
	// The client's timeout leaves room for a real neutron-server on a busy
	// machine (the integration tier runs beside the labs); the stalled
	// answer comes well after it.
	const timeout = 4 * time.Second
	faults := &faultyNeutron{seen: map[string]int{}, rules: []fault{
		{method: "POST", path: "/v2.0/ports", times: 2, status: http.StatusConflict},
		{method: "POST", path: "/v2.0/ports", times: 1, stall: 3 * timeout},
		{method: "POST", path: "/v2.0/ports", times: 1, late: 2 * timeout},
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
	// More ports than the pod needed: the next bulk create is the late one. On a
	// busy machine its ports, adopted once they appear, may fill the pool before
	// Populate makes its own: that is the pool at its maximum, not a failure.
	if _, err := m.Populate(f.ctx, f.key, 4); err != nil && !strings.Contains(err.Error(), "at its maximum size") {
		t.Fatalf("populate past the late create: %v", err)
	}
	var stalled []string
	f.eventually("both creates whose answer was lost sent", func() bool {
		faults.mu.Lock()
		defer faults.mu.Unlock()
		stalled = append([]string(nil), faults.stalled...)
		return len(stalled) == 2
	})
	for i, tag := range stalled {
		what := map[int]string{0: "the create whose answer was lost", 1: "the create made after its lookup"}[i]
		var lost []neutron.Port
		f.eventually(what+": its ports in Neutron", func() bool {
			lost, err = f.nc.ListPorts(f.ctx, url.Values{"tags": {tag}})
			return err == nil && len(lost) > 0
		})
		f.eventually(what+": its ports in the pool", func() bool {
			held := accounted(m)
			for _, p := range lost {
				if held[p.ID] == "" {
					return false
				}
			}
			return true
		})
	}
	f.noLeak(m)
}

// TestFailedBookkeepingOfAGonePod: a pod's bookkeeping fails (Neutron answers
// 503) and waits for its retry; the pod goes first. Its port is reset and back
// in its pool, and stays so: the retry does not name the gone pod on it again
// (it did, and the port was nobody's in the pool and the gone pod's in Neutron
// for good).
func TestFailedBookkeepingOfAGonePod(t *testing.T) {
	f := newFixture(t)
	f.backoff = 2 * time.Second
	faults := &faultyNeutron{seen: map[string]int{}, rules: []fault{
		{method: "PUT", path: "/v2.0/ports/", times: 1, status: http.StatusServiceUnavailable},
	}}
	srv := httptest.NewServer(faults.handler(neutronServer.URL))
	t.Cleanup(srv.Close) // after the manager stops (cleanups run last first)
	nc, err := neutron.Connect(f.ctx, neutron.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	f.nc = nc
	m, _ := f.start(testSettings(), false)
	p := f.pod("brief")
	a := f.acquire(m, p)
	if port, err := f.nc.GetPort(f.ctx, a.ID); err != nil || port.DeviceID != "" {
		t.Fatalf("port %s right after its bookkeeping was refused: %+v, %v; want no device yet", a.ID, port, err)
	}
	f.remove(p)
	if _, ok := m.Release(f.ns + "/" + p.Name); !ok {
		t.Fatal("release of a port in use failed")
	}
	f.backInPool(m, a.ID)
	time.Sleep(2 * f.backoff) // past the refused bookkeeping's retry
	port, err := f.nc.GetPort(f.ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if port.Name != portpool.AvailableName || port.DeviceID != "" {
		t.Errorf("port %s free in its pool, but Neutron has it as %q, device %q: the gone pod's bookkeeping was retried after the reset", a.ID, port.Name, port.DeviceID)
	}
	f.noLeak(m)
}
