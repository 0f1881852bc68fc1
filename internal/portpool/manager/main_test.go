package manager

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
	"netshift.io/netshift/internal/testenv"
)

// The tests share one real API server and one real neutron-server.
var (
	env            *testenv.Env
	envMissing     error
	neutronServer  *testenv.Neutron
	neutronMissing error
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithNeutron(m, &env, &envMissing, &neutronServer, &neutronMissing))
}

var seq atomic.Int64

// operatorClient acts as the operator, the only identity that may record a
// pod's port.
func operatorClient(t testing.TB) client.Client {
	t.Helper()
	c, err := env.OperatorClient()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixture is one test's world: its own cluster ID (so tests never see each
// other's ports), namespace, network, security group and Neutron client.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	nc      *neutron.Client
	ns      string
	cluster string
	key     portpool.Key
	sg      string
	// flush is the deferred bookkeeping's interval (default 50 ms).
	flush time.Duration
	// backoff is the first pause after a failed Neutron call (default 50 ms).
	backoff time.Duration
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testenv.Require(t, envMissing)
	testenv.Require(t, neutronMissing)
	ctx := t.Context()
	nc, err := neutron.Connect(ctx, neutron.Options{URL: neutronServer.URL})
	if err != nil {
		t.Fatal(err)
	}
	n := seq.Add(1)
	f := &fixture{t: t, ctx: ctx, nc: nc, ns: fmt.Sprintf("pp%d", n), cluster: fmt.Sprintf("c%d-%d", n, time.Now().UnixNano()%1e6)}
	project := "proj" + fmt.Sprint(n)
	net, err := nc.CreateNetwork(ctx, project, "net", fmt.Sprintf("10.%d.0.0/16", n))
	if err != nil {
		t.Fatal(err)
	}
	if f.sg, err = nc.CreateSecurityGroup(ctx, project, "pods"); err != nil {
		t.Fatal(err)
	}
	if f.key, err = portpool.NewKey(project, net, "worker-1", "", []string{f.sg}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns, Labels: map[string]string{OptInLabel: "enabled"},
		Annotations: map[string]string{ProjectAnnotation: project, NetworkAnnotation: net, SecurityGroupsAnnotation: f.sg}}}); err != nil {
		t.Fatal(err)
	}
	return f
}

func testSettings() portpool.Settings {
	return portpool.Settings{MinReady: 3, Batch: 4, MaxSize: 12, RecyclePeriod: 50 * time.Millisecond, MaxConcurrentCreates: 2}
}

// start runs a manager until the test ends (or stop is called).
func (f *fixture) start(s portpool.Settings, deferred bool) (*Manager, context.CancelFunc) {
	f.t.Helper()
	m, err := New(f.nc, operatorClient(f.t), Options{Settings: s, ClusterID: f.cluster, Deferred: deferred, FlushInterval: cmp.Or(f.flush, 50*time.Millisecond),
		Backoff: cmp.Or(f.backoff, 50*time.Millisecond), Log: ctrl.Log.WithName("portpool")})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { _ = m.Start(ctx); close(done) }()
	f.t.Cleanup(func() { cancel(); <-done })
	f.eventually("recovery", m.Ready)
	return m, func() { cancel(); <-done }
}

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pod creates a pod scheduled on worker-1.
func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := env.Client.Create(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// remove deletes a pod at once, as the kubelet confirms a deletion (envtest has none).
func (f *fixture) remove(p *corev1.Pod) {
	f.t.Helper()
	if err := env.Client.Delete(f.ctx, p, client.GracePeriodSeconds(0)); err != nil {
		f.t.Fatal(err)
	}
}

// acquire retries while the pool is refilled.
func (f *fixture) acquire(m *Manager, p *corev1.Pod) Assignment {
	f.t.Helper()
	var a Assignment
	var err error
	f.eventually("a port for "+p.Name, func() bool {
		a, err = m.Acquire(f.ctx, p, f.key)
		return err == nil
	})
	return a
}

// backInPool waits until port id is ready in the fixture's pool again.
func (f *fixture) backInPool(m *Manager, id string) {
	f.t.Helper()
	f.eventually("port "+id+" back in its pool", func() bool {
		d, _ := m.Show(f.key)
		for _, q := range d.ReadyPorts {
			if q.ID == id {
				return true
			}
		}
		return false
	})
}

// tagged lists the ports of this test's cluster in Neutron.
func (f *fixture) tagged() map[string]neutron.Port {
	f.t.Helper()
	ports, err := f.nc.ListPorts(f.ctx, url.Values{"tags": {"netshift-cluster=" + f.cluster}})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]neutron.Port{}
	for _, p := range ports {
		out[p.ID] = p
	}
	return out
}

// accounted are the ports the manager holds (ready, in use, recycling).
func accounted(m *Manager) map[string]string {
	out := map[string]string{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.pools {
		for _, q := range p.Ready {
			out[q.ID] = "ready"
		}
		for id := range p.InUse {
			out[id] = "in use"
		}
		for _, q := range p.Recycling {
			out[q.ID] = "recycling"
		}
	}
	return out
}

// noLeak asserts every tagged port in Neutron is accounted for, and the reverse.
func (f *fixture) noLeak(m *Manager) {
	f.t.Helper()
	f.eventually("every port accounted for", func() bool {
		have, want := f.tagged(), accounted(m)
		if len(have) != len(want) {
			return false
		}
		for id := range want {
			if _, ok := have[id]; !ok {
				return false
			}
		}
		return true
	})
}

func reconcileRequest(p *corev1.Pod) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
}
