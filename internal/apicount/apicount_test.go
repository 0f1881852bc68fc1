package apicount

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        Key
	}{
		{"GET", "/api/v1/nodes", Key{"list", "nodes"}},
		{"GET", "/api/v1/nodes?watch=true&resourceVersion=5", Key{"watch", "nodes"}},
		{"GET", "/api/v1/nodes/worker-3", Key{"get", "nodes"}},
		{"PATCH", "/api/v1/nodes/worker-3", Key{"patch", "nodes"}},
		{"PATCH", "/api/v1/nodes/worker-3/status", Key{"patch", "nodes/status"}},
		{"GET", "/api/v1/namespaces/default/pods", Key{"list", "pods"}},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", Key{"list", "pods"}},
		{"POST", "/api/v1/namespaces/default/pods/web-1/eviction", Key{"create", "pods/eviction"}},
		{"GET", "/api/v1/namespaces/netshift-system", Key{"get", "namespaces"}},
		{"GET", "/apis/netshift.io/v1alpha1/netshiftnodestates", Key{"list", "netshiftnodestates"}},
		{"PATCH", "/apis/netshift.io/v1alpha1/netshiftnodestates/n1/status", Key{"patch", "netshiftnodestates/status"}},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/netshift-system/leases/netshift-operator", Key{"update", "leases"}},
		{"POST", "/apis/netshift.io/v1alpha1/netshiftnodestates", Key{"create", "netshiftnodestates"}},
		{"DELETE", "/api/v1/namespaces/work/pods", Key{"deletecollection", "pods"}},
		{"DELETE", "/api/v1/namespaces/work/pods/p", Key{"delete", "pods"}},
		{"GET", "/version", Key{"get", "/version"}},
	} {
		if got := Classify(httptest.NewRequest(tc.method, tc.url, nil)); got != tc.want {
			t.Errorf("%s %s: got %+v, want %+v", tc.method, tc.url, got, tc.want)
		}
	}
}

func TestCounterCountsAndStartsAgain(t *testing.T) {
	c := New()
	var seen int
	c.Observe = func(Key) { seen++ }
	rt := c.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) { return &http.Response{StatusCode: 200}, nil }))
	for _, u := range []string{"/api/v1/nodes", "/api/v1/nodes", "/api/v1/nodes/a"} {
		if _, err := rt.RoundTrip(httptest.NewRequest("GET", u, nil)); err != nil {
			t.Fatal(err)
		}
	}
	got := c.Take()
	if got[Key{"list", "nodes"}] != 2 || got[Key{"get", "nodes"}] != 1 || seen != 3 {
		t.Errorf("counts %v, observed %d; want 2 lists, 1 get, 3 observed", got, seen)
	}
	if again := c.Take(); len(again) != 0 {
		t.Errorf("after Take the counts start again from zero, got %v", again)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
