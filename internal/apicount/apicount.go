// Package apicount counts a client's Kubernetes API requests by verb and
// resource, from the requests themselves (a wrapped transport): what a
// component costs the API server, per node of the cluster it runs on.
package apicount

import (
	"net/http"
	"strings"
	"sync"
)

// Key is one verb on one resource (a subresource as "netshiftnodestates/status").
type Key struct{ Verb, Resource string }

// Classify says which verb of the Kubernetes API a request is (get, list,
// watch, create, update, patch, delete, deletecollection) and on which resource.
func Classify(r *http.Request) Key {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return Key{Verb: strings.ToLower(r.Method), Resource: "/" + strings.Join(parts, "/")}
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:] // a namespaced resource
	}
	resource := ""
	collection := len(rest) <= 1
	switch len(rest) {
	case 0:
	case 1, 2:
		resource = rest[0]
	default:
		resource = rest[0] + "/" + rest[2]
	}
	verb := ""
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		q := r.URL.Query()
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			verb = "watch"
		case collection:
			verb = "list"
		default:
			verb = "get"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if collection {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(r.Method)
	}
	return Key{Verb: verb, Resource: resource}
}

// apiServerVerbs are the verbs of the API server's own apiserver_request_total, as Classify names them.
var apiServerVerbs = map[string]string{"POST": "create", "PUT": "update", "PATCH": "patch", "APPLY": "patch", "DELETE": "delete",
	"DELETECOLLECTION": "delete", "GET": "get", "LIST": "list", "WATCH": "watch", "WATCHLIST": "watch"}

// VerbOfAPIServer names a verb of the API server's apiserver_request_total as Classify
// does ("PUT" is "update", "LIST" is "list"); a verb it does not know stays as it is.
func VerbOfAPIServer(verb string) string {
	if named, ok := apiServerVerbs[verb]; ok {
		return named
	}
	return verb
}

// IsWrite says whether the verb changes something.
func IsWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Counter counts requests by Key. The zero value is not ready: use New.
type Counter struct {
	mu     sync.Mutex
	counts map[Key]int64
	// Observe, when set, is told of every request too (a Prometheus counter).
	Observe func(Key)
}

// New makes an empty Counter.
func New() *Counter { return &Counter{counts: map[Key]int64{}} }

// Wrap counts the requests of rt (for rest.Config.WrapTransport).
func (c *Counter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{next: rt, c: c}
}

// Take returns the counts so far and starts again from zero.
func (c *Counter) Take() map[Key]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[Key]int64{}
	return out
}

func (c *Counter) add(k Key) {
	c.mu.Lock()
	c.counts[k]++
	c.mu.Unlock()
	if c.Observe != nil {
		c.Observe(k)
	}
}

type roundTripper struct {
	next http.RoundTripper
	c    *Counter
}

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.add(Classify(r))
	return t.next.RoundTrip(r)
}
