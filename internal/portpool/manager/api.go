package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"netshift.io/netshift/internal/portpool"
)

// PoolStatus is one pool as the API lists it.
type PoolStatus struct {
	Key       string `json:"key"`
	Ready     int    `json:"ready"`
	InUse     int    `json:"inUse"`
	Recycling int    `json:"recycling"`
	Creating  int    `json:"creating"`
	LastError string `json:"lastError,omitempty"`
}

// PoolDetail is one pool with its ports.
type PoolDetail struct {
	PoolStatus
	ReadyPorts     []portpool.Port  `json:"readyPorts"`
	InUsePorts     []portpool.Owned `json:"inUsePorts"`
	RecyclingPorts []portpool.Port  `json:"recyclingPorts"`
}

// Status is the manager as a whole.
type Status struct {
	Recovered bool           `json:"recovered"`
	Deferred  bool           `json:"deferredBookkeeping"`
	Pending   int            `json:"pendingBookkeeping"`
	Deleting  int            `json:"deleting"`
	Calls     map[string]int `json:"neutronRequests"`
	Pools     []PoolStatus   `json:"pools"`
}

// List returns every pool, sorted by key.
func (m *Manager) List() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Recovered: m.recovered, Deferred: m.opts.Deferred, Pending: m.ledger.Len() + m.sending, Deleting: len(m.deleting), Calls: m.neutron.Calls().Snapshot()}
	for k, p := range m.pools {
		st.Pools = append(st.Pools, statusOf(k, p))
	}
	sort.Slice(st.Pools, func(i, j int) bool { return st.Pools[i].Key < st.Pools[j].Key })
	return st
}

func statusOf(k portpool.Key, p *poolState) PoolStatus {
	c := p.Counts()
	return PoolStatus{Key: k.String(), Ready: c.Ready, InUse: c.InUse, Recycling: c.Recycling, Creating: c.Creating, LastError: p.lastError}
}

// Show returns one pool with its ports.
func (m *Manager) Show(key portpool.Key) (PoolDetail, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pools[key]
	if !ok {
		return PoolDetail{}, false
	}
	d := PoolDetail{PoolStatus: statusOf(key, p), ReadyPorts: append([]portpool.Port{}, p.Ready...),
		RecyclingPorts: append([]portpool.Port{}, p.Recycling...), InUsePorts: []portpool.Owned{}}
	for _, o := range p.InUse {
		d.InUsePorts = append(d.InUsePorts, o)
	}
	sort.Slice(d.InUsePorts, func(i, j int) bool { return d.InUsePorts[i].ID < d.InUsePorts[j].ID })
	return d, true
}

// Free deletes the ports no pod owns (ready and recycling) of one pool, or of
// every pool when key is nil: `netshift portpool drain` uses it before an
// uninstall, so no port is left to eat quota. Ports in use are kept.
func (m *Manager) Free(ctx context.Context, key *portpool.Key) (int, error) {
	if !m.Ready() {
		return 0, fmt.Errorf("free: %w (recovering)", ErrNotReady)
	}
	m.mu.Lock()
	todo := map[portpool.Key][]string{}
	for k, p := range m.pools {
		if key != nil && k != *key {
			continue
		}
		for _, port := range append(append([]portpool.Port{}, p.Ready...), p.Recycling...) {
			todo[k] = append(todo[k], port.ID)
			m.deleting[port.ID] = k // accounted for until Neutron confirms
		}
		p.Ready, p.Recycling = nil, nil
	}
	if key != nil {
		if _, ok := m.pools[*key]; !ok {
			m.mu.Unlock()
			return 0, fmt.Errorf("free: no pool %s", key)
		}
	}
	m.mu.Unlock()
	n := 0
	for k, ids := range todo {
		sort.Strings(ids)
		m.deletePorts(ctx, k, ids)
		n += len(ids)
	}
	m.mu.Lock()
	left := len(m.deleting)
	m.mu.Unlock()
	if left > 0 {
		return n, fmt.Errorf("free: %d ports could not be deleted yet; they are retried", left)
	}
	return n, nil
}

// PopulateRequest asks for count new ports in the pool of Key.
type PopulateRequest struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
}

// FreeRequest names the pool to free ("" for every pool).
type FreeRequest struct {
	Key string `json:"key,omitempty"`
}

// CountResponse says how many ports an action created or deleted.
type CountResponse struct {
	Ports int    `json:"ports"`
	Error string `json:"error,omitempty"`
}

// Handler is the manager's API: GET /v1/pools, GET /v1/pools/show?key=K,
// POST /v1/populate, POST /v1/free.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/pools", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, m.List()) })
	mux.HandleFunc("GET /v1/pools/show", func(w http.ResponseWriter, r *http.Request) {
		key, err := portpool.ParseKey(r.URL.Query().Get("key"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, CountResponse{Error: err.Error()})
			return
		}
		d, ok := m.Show(key)
		if !ok {
			writeJSON(w, http.StatusNotFound, CountResponse{Error: "no pool " + key.String()})
			return
		}
		writeJSON(w, http.StatusOK, d)
	})
	mux.HandleFunc("POST /v1/populate", func(w http.ResponseWriter, r *http.Request) {
		var req PopulateRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, CountResponse{Error: "populate: " + err.Error()})
			return
		}
		key, err := portpool.ParseKey(req.Key)
		if err == nil && (req.Count < 1 || req.Count > 10000) {
			err = fmt.Errorf("populate: count: %d is out of range 1..10000", req.Count)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, CountResponse{Error: err.Error()})
			return
		}
		n, err := m.Populate(r.Context(), key, req.Count)
		writeCount(w, n, err)
	})
	mux.HandleFunc("POST /v1/free", func(w http.ResponseWriter, r *http.Request) {
		var req FreeRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			writeJSON(w, http.StatusBadRequest, CountResponse{Error: "free: " + err.Error()})
			return
		}
		var key *portpool.Key
		if req.Key != "" {
			k, err := portpool.ParseKey(req.Key)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, CountResponse{Error: err.Error()})
				return
			}
			key = &k
		}
		n, err := m.Free(r.Context(), key)
		writeCount(w, n, err)
	})
	return mux
}

func writeCount(w http.ResponseWriter, n int, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, CountResponse{Ports: n})
	case errors.Is(err, ErrNotReady):
		writeJSON(w, http.StatusServiceUnavailable, CountResponse{Ports: n, Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, CountResponse{Ports: n, Error: err.Error()})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Listen opens the API's address: a unix socket path (the default form,
// mode 0600) or tcp:HOST:PORT, which needs tls. A stale socket file is
// replaced.
func Listen(addr string, tlsFiles TLSFiles) (net.Listener, error) {
	if hostPort, ok := strings.CutPrefix(addr, "tcp:"); ok {
		return listenTCP(hostPort, tlsFiles)
	}
	path := strings.TrimPrefix(addr, "unix:")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("port pool API %s: %w", path, err)
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("port pool API %s: another process is serving it", path)
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("port pool API %s: %w", path, err)
	}
	return l, os.Chmod(path, 0o600)
}

// Serve runs the API on l until ctx ends (a controller-runtime Runnable when
// wrapped); with an Authorizer every request needs an allowed bearer token
// (the TCP form), without one it is open to whoever can open l (the socket).
func (m *Manager) Serve(ctx context.Context, l net.Listener, a Authorizer) error {
	h := m.Handler()
	if a != nil {
		h = RequireToken(a, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Client calls a manager's API.
type Client struct {
	http  *http.Client
	base  string
	token string
}

// NewClient reaches the API at addr: a unix socket path, or tcp:HOST:PORT
// over TLS with o's token and CA.
func NewClient(addr string, o ClientOptions) (*Client, error) {
	if hostPort, ok := strings.CutPrefix(addr, "tcp:"); ok {
		cfg, err := tlsClientConfig(o.CAFile)
		if err != nil {
			return nil, err
		}
		return &Client{http: &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Minute},
			base: "https://" + hostPort, token: o.Token}, nil
	}
	path := strings.TrimPrefix(addr, "unix:")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	return &Client{http: &http.Client{Transport: tr, Timeout: 10 * time.Minute}, base: "http://portpool"}, nil
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("port pool API: %w (is the operator running with port pools, and --server right?)", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e CountResponse
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s (HTTP %d)", e.Error, resp.StatusCode)
		}
		return fmt.Errorf("port pool API: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return json.Unmarshal(data, out)
}

// List lists the pools.
func (c *Client) List(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, http.MethodGet, "/v1/pools", nil, &st)
}

// Show shows one pool.
func (c *Client) Show(ctx context.Context, key string) (PoolDetail, error) {
	var d PoolDetail
	return d, c.do(ctx, http.MethodGet, "/v1/pools/show?key="+url.QueryEscape(key), nil, &d)
}

// Populate creates count ports in a pool.
func (c *Client) Populate(ctx context.Context, key string, count int) (int, error) {
	var r CountResponse
	err := c.do(ctx, http.MethodPost, "/v1/populate", PopulateRequest{Key: key, Count: count}, &r)
	return r.Ports, err
}

// Free deletes the free ports of a pool ("" for every pool).
func (c *Client) Free(ctx context.Context, key string) (int, error) {
	var r CountResponse
	err := c.do(ctx, http.MethodPost, "/v1/free", FreeRequest{Key: key}, &r)
	return r.Ports, err
}
