package scale

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/agent"
	"netshift.io/netshift/internal/apicount"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodenet"
	"netshift.io/netshift/internal/scheme"
	"netshift.io/netshift/internal/simnode"
)

// agents are the simulated nodes' agents, all in this process: the real
// agent code, each with its own client, connection and watches.
type agents struct {
	mu    sync.Mutex
	stops map[string]func()
	// requests counts the agents' API requests.
	requests *apicount.Counter
}

// agentConfig is node's agent's identity with a connection of its own. The identity is the
// DaemonSet's: its ServiceAccount, with the node's name as a pod-bound token carries it, so
// the API server's priority and fairness sees every agent as one flow, as on a real cluster.
// The connection is its own because client-go shares one between configs it can cache, and
// a real agent has its own.
func (c *cluster) agentConfig(node string, counter *apicount.Counter) *rest.Config {
	cfg := c.cp.AgentConfig(node)
	cfg.QPS, cfg.Burst = 20, 30 // a real agent's client-go defaults are 5 and 10; it rarely needs more
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext // its own: no shared transport
	cfg.WrapTransport = counter.Wrap
	return cfg
}

// startAgents starts an agent per simulated node, width at a time.
func (c *cluster) startAgents(ctx context.Context, nodes map[string]*simnode.Node, names []string, work time.Duration) (*agents, error) {
	a := &agents{stops: map[string]func(){}, requests: apicount.New()}
	shared, err := c.sharedTypes()
	if err != nil {
		return nil, err
	}
	var started atomic.Int64
	err = forEach(ctx, len(names), 16, func(_ context.Context, i int) error {
		name := names[i]
		sim := nodes[name]
		mgr, err := agent.NewManager(c.agentConfig(name, a.requests), agent.Options{Node: name, HealthAddr: "0", ManyInProcess: true, Shared: shared,
			OperatorTimeURL: c.timeURL, Host: sim, NewPlugin: func(nodenet.Env) (netplugin.Node, error) { return sim, nil },
			UnderlayInterface: simnode.Underlay, Pods: nodenet.NoPods{}, Logger: &c.agentLog,
			Work: map[v1alpha1.OperationKind]agent.Work{v1alpha1.OperationReconfigure: agent.HoldWork(work)}})
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		a.run(name, mgr)
		if n := started.Add(1); n%500 == 0 {
			fmt.Fprintf(c.out, "scale: %d of %d agents started\n", n, len(names))
		}
		return nil
	})
	if err != nil {
		a.stopAll()
		return nil, err
	}
	return a, nil
}

// sharedTypes is the type information every agent of the process shares
// (agent.Shared): one scheme, and one REST mapper discovering as the admin.
func (c *cluster) sharedTypes() (*agent.Shared, error) {
	s := scheme.New()
	httpClient, err := rest.HTTPClientFor(c.cp.Admin)
	if err != nil {
		return nil, fmt.Errorf("agents' REST mapper: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(c.cp.Admin, httpClient)
	if err != nil {
		return nil, fmt.Errorf("agents' REST mapper: %w", err)
	}
	return &agent.Shared{Scheme: s, RESTMapper: mapper}, nil
}

// run starts an agent's manager until stop or stopAll.
func (a *agents) run(node string, mgr manager.Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	a.mu.Lock()
	a.stops[node] = func() { cancel(); <-done }
	a.mu.Unlock()
}

// silence stops node's agent: the node goes silent.
func (a *agents) silence(node string) {
	a.mu.Lock()
	stop := a.stops[node]
	delete(a.stops, node)
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (a *agents) stopAll() {
	a.mu.Lock()
	stops := a.stops
	a.stops = map[string]func(){}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Add(1)
		go func() { defer wg.Done(); stop() }()
	}
	wg.Wait()
}
