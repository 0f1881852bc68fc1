package scale

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"netshift.io/netshift/internal/apicount"
)

func keyOf(verb, resource string) apicount.Key { return apicount.Key{Verb: verb, Resource: resource} }

func TestBadOptionsNameTheFlagAndItsRange(t *testing.T) {
	good := Options{Nodes: 100, Run: RunMTU, Pools: 10, PodsPerNode: 10, WorkTime: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Nodes = 5 }, "--nodes 5: must be from 10 to 10000"},
		{func(o *Options) { o.Nodes = 20000 }, "--nodes 20000: must be from 10 to 10000"},
		{func(o *Options) { o.Run = "reboot" }, `--run "reboot": must be mtu, port or drain`},
		{func(o *Options) { o.FailPercent = 11 }, "--fail-percent 11: must be from 0 to 10"},
		{func(o *Options) { o.SilentPercent = -1 }, "--silent-percent -1: must be from 0 to 10"},
		{func(o *Options) { o.Pools = 0 }, "--pools 0: must be from 1 to 100"},
		{func(o *Options) { o.PodsPerNode = 101 }, "--pods-per-node 101: must be from 0 to 100"},
		{func(o *Options) { o.WorkTime = 2 * time.Minute }, "--work-time 2m0s: must be from 0s to 1m"},
		{func(o *Options) { o.AgentWriteSpacing = time.Second }, "--agent-write-spacing 1s: must be from 1ms to 100ms"},
	} {
		o := good
		tc.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestPickSpreadsTheFaultsOverTheNodes(t *testing.T) {
	var names []string
	for i := range 1000 {
		names = append(names, string(rune('a'+i%26))+strings.Repeat("x", i/26))
	}
	failing, silent := pick(names, 1, 0), pick(names, 1, 1)
	if len(failing) != 10 || len(silent) != 10 {
		t.Fatalf("1 %% of 1000: %d failing, %d silent", len(failing), len(silent))
	}
	seen := map[string]bool{}
	for _, n := range append(failing, silent...) {
		if seen[n] {
			t.Errorf("node %s picked twice", n)
		}
		seen[n] = true
	}
	if pick(names[:50], 1, 0) != nil {
		t.Error("1 % of 50 nodes is no node")
	}
}

func TestPercentiles(t *testing.T) {
	var v []float64
	for i := range 100 {
		v = append(v, float64(100-i))
	}
	if got := percentiles(v); got != [3]float64{51, 100, 100} {
		t.Errorf("percentiles of 1..100: %v", got)
	}
	if got := percentiles(nil); got != [3]float64{} {
		t.Errorf("percentiles of nothing: %v", got)
	}
}

func TestParseRequestsReadsTheOperatorsCounter(t *testing.T) {
	text := `# HELP netshift_operator_api_requests_total API requests the operator made
# TYPE netshift_operator_api_requests_total counter
netshift_operator_api_requests_total{resource="netshiftnodestates",verb="patch"} 5000
netshift_operator_api_requests_total{resource="nodes",verb="list"} 3
other_metric 7
`
	got, _, err := parseRequests(strings.NewReader(text), operatorRequests)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[keyOf("patch", "netshiftnodestates")] != 5000 || got[keyOf("list", "nodes")] != 3 {
		t.Errorf("parsed %v", got)
	}
}

func TestParseRequestsSumsTheAPIServersCounterOverCodes(t *testing.T) {
	text := `apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 900
apiserver_request_total{code="409",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="resource",subresource="",verb="PATCH",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="eviction",verb="POST",version="v1"} 3
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="WATCH",version="v1"} 2
apiserver_request_total{code="429",component="apiserver",dry_run="",group="netshift.io",resource="netshiftnodestates",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="netshift.io",resource="netshiftnodestates",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 100
`
	got, tooMany, err := parseRequests(strings.NewReader(text), apiServerRequests)
	if err != nil {
		t.Fatal(err)
	}
	want := map[apicount.Key]int64{keyOf("update", "leases"): 1000, keyOf("patch", "nodes"): 7, keyOf("create", "pods"): 3, keyOf("watch", "nodes"): 2,
		keyOf("patch", "netshiftnodestates"): 140}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %v, want %v", got, want)
	}
	if want := (map[apicount.Key]int64{keyOf("patch", "netshiftnodestates"): 40}); !reflect.DeepEqual(tooMany, want) {
		t.Errorf("the 429 answers parsed %v, want %v", tooMany, want)
	}
}
