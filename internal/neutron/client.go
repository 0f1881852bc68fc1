// Package neutron is netshift's Neutron client: the calls the port pools
// make (bulk port creation, which gophercloud lacks, updates, lists with
// paging, deletes, trunk subports), every HTTP request counted by kind, and
// errors that say whether a retry can help. Authentication and the service
// catalog are gophercloud's, from a standard clouds.yaml, or none for a
// no-auth endpoint.
package neutron

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"sigs.k8s.io/yaml"
)

// Client talks to one Neutron server.
type Client struct {
	sc    *gophercloud.ServiceClient
	calls *Calls
}

// Options say where Neutron is.
type Options struct {
	// URL is a no-auth Neutron endpoint (http://HOST:9696), for tests and labs.
	URL string
	// CloudsFile and Cloud name a clouds.yaml and the cloud in it. A cloud with
	// "auth_type: none" and "auth: {endpoint: URL}" is a no-auth endpoint too.
	CloudsFile, Cloud string
	// Timeout bounds each request (default 30 s).
	Timeout time.Duration
}

// Connect builds a client; with credentials it authenticates first.
func Connect(ctx context.Context, o Options) (*Client, error) {
	calls := &Calls{byKind: map[string]int{}}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	httpClient := http.Client{Timeout: timeout, Transport: &countingTransport{next: http.DefaultTransport, calls: calls}}
	endpoint := o.URL
	if endpoint == "" && o.CloudsFile != "" {
		var err error
		if endpoint, err = noAuthEndpoint(o.CloudsFile, o.Cloud); err != nil {
			return nil, err
		}
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("neutron URL %q: want http(s)://HOST:PORT", endpoint)
		}
		base := strings.TrimSuffix(endpoint, "/") + "/"
		pc := &gophercloud.ProviderClient{HTTPClient: httpClient}
		return &Client{sc: &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: base, ResourceBase: base + "v2.0/"}, calls: calls}, nil
	}
	if o.CloudsFile == "" {
		return nil, errors.New("neutron: give a no-auth URL (--neutron-url) or a clouds.yaml (--os-clouds-file and --os-cloud)")
	}
	if o.Cloud == "" {
		return nil, fmt.Errorf("neutron: --os-cloud: required with the clouds file %s", o.CloudsFile)
	}
	ao, eo, tlsConfig, err := clouds.Parse(clouds.WithCloudName(o.Cloud), clouds.WithLocations(o.CloudsFile))
	if err != nil {
		return nil, fmt.Errorf("neutron: clouds file %s, cloud %q: %w", o.CloudsFile, o.Cloud, err)
	}
	if tlsConfig != nil {
		httpClient.Transport = &countingTransport{next: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}, calls: calls}
	}
	ao.AllowReauth = true
	pc, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("neutron: identity endpoint %q: %w", ao.IdentityEndpoint, err)
	}
	pc.HTTPClient = httpClient
	if err := openstack.Authenticate(ctx, pc, ao); err != nil {
		return nil, fmt.Errorf("neutron: authenticate as cloud %q: %w", o.Cloud, err)
	}
	sc, err := openstack.NewNetworkV2(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("neutron: find the network endpoint of cloud %q: %w", o.Cloud, err)
	}
	return &Client{sc: sc, calls: calls}, nil
}

// noAuthEndpoint reads a cloud with auth_type none from a clouds.yaml
// (the openstacksdk form: auth: {endpoint: URL}); "" if the cloud has auth.
func noAuthEndpoint(file, cloud string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("neutron: clouds file: %w", err)
	}
	var doc struct {
		Clouds map[string]struct {
			AuthType string `json:"auth_type"`
			Auth     struct {
				Endpoint string `json:"endpoint"`
			} `json:"auth"`
		} `json:"clouds"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("neutron: clouds file %s: %w", file, err)
	}
	c, ok := doc.Clouds[cloud]
	if !ok {
		return "", fmt.Errorf("neutron: clouds file %s has no cloud %q", file, cloud)
	}
	if c.AuthType != "none" && c.AuthType != "noauth" {
		return "", nil
	}
	if c.Auth.Endpoint == "" {
		return "", fmt.Errorf("neutron: clouds file %s, cloud %q: auth_type %s needs auth.endpoint", file, cloud, c.AuthType)
	}
	return c.Auth.Endpoint, nil
}

// Calls counts the HTTP requests made to Neutron, by kind.
type Calls struct {
	mu     sync.Mutex
	byKind map[string]int
}

// Snapshot returns the counts so far.
func (c *Calls) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.byKind))
	for k, v := range c.byKind {
		out[k] = v
	}
	return out
}

// Total is every request so far.
func (c *Calls) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.byKind {
		n += v
	}
	return n
}

func (c *Calls) add(kind string) {
	c.mu.Lock()
	c.byKind[kind]++
	c.mu.Unlock()
}

// Calls returns the client's request counter.
func (c *Client) Calls() *Calls { return c.calls }

// countingTransport counts each request by what it does to which resource.
type countingTransport struct {
	next  http.RoundTripper
	calls *Calls
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls.add(CallKind(r.Method, r.URL.Path))
	return t.next.RoundTrip(r)
}

// CallKind names a request: "create port", "list ports", "update trunk"...
func CallKind(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	resource := "other"
	for i, p := range parts {
		if p == "v2.0" && i+1 < len(parts) {
			resource = parts[i+1]
			if i+3 < len(parts) {
				resource += " " + parts[i+3] // trunks/ID/add_subports
			}
			withID := i+2 < len(parts)
			switch method {
			case http.MethodGet:
				if withID {
					return "get " + resource
				}
				return "list " + resource
			case http.MethodPost:
				return "create " + resource
			case http.MethodPut:
				return "update " + resource
			case http.MethodDelete:
				return "delete " + resource
			}
		}
	}
	if strings.Contains(path, "/auth/tokens") {
		return "authenticate"
	}
	return strings.ToLower(method) + " " + resource
}

// Retryable says whether a failed call may succeed if tried again later:
// Neutron over quota (409 OverQuota), a 5xx, a timeout or a broken connection.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	for _, code := range []int{500, 502, 503, 504} {
		if gophercloud.ResponseCodeIs(err, code) {
			return true
		}
	}
	if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		return strings.Contains(err.Error(), "OverQuota") || strings.Contains(err.Error(), "Quota exceeded")
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "connection refused") ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF")
}

// NotFound says whether a call failed because the resource does not exist.
func NotFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }
