// Package simnode is a simulated node for scale tests: the data plane the
// agent reaches (package nodehost's Host and a network plugin's driver,
// netplugin.Node) held in memory, with operations that take the time the lab
// measured on real nodes, a clock of its own, and faults on request. Everything
// above it is the real agent: thousands of them run in one process (as
// Kubernetes' scale tests run kwok's or kubemark's hollow nodes), each with its
// own client and watches.
package simnode

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/nodehost"
)

// Spec is a simulated node as it starts.
type Spec struct {
	Name string
	// Pods is how many pods have a network on the node (each an eth0 and its node end).
	Pods int
	// MTU is the pods' MTU; UnderlayMTU the underlay's (Underlay, its interface).
	MTU, UnderlayMTU int
	// Encapsulation and TunnelPort are the node's tunnels.
	Encapsulation v1alpha1.Encapsulation
	TunnelPort    int
	// ClockOffset is how far the node's clock is from the machine's.
	ClockOffset time.Duration
	// Timings are its operations (default LabTimings).
	Timings *Timings
}

// Underlay is the simulated node's interface onto the underlay.
const Underlay = "eth0"

// Node is a simulated node: a nodehost.Host and a netplugin.Node at once.
type Node struct {
	name    string
	offset  time.Duration
	timings Timings
	boot    string

	mu          sync.Mutex
	rng         *rand.Rand
	podMTU      []int // each pod's eth0
	hostEndMTU  []int // each pod's node end
	nodePortMTU int
	underlayMTU int
	encap       v1alpha1.Encapsulation
	tunnelPort  int
	config      *nodeconfig.File
	failNext    map[v1alpha1.StepAction]int
	configLock  chan struct{}
}

var (
	_ nodehost.Host  = (*Node)(nil)
	_ netplugin.Node = (*Node)(nil)
)

// New makes the node s describes.
func New(s Spec) *Node {
	t := LabTimings
	if s.Timings != nil {
		t = *s.Timings
	}
	h := fnv.New64a()
	h.Write([]byte(s.Name))
	seed := h.Sum64()
	n := &Node{name: s.Name, offset: s.ClockOffset, timings: t, boot: fmt.Sprintf("sim-%016x", seed),
		rng: rand.New(rand.NewPCG(seed, 0x6e657473)), podMTU: make([]int, s.Pods), hostEndMTU: make([]int, s.Pods),
		nodePortMTU: s.MTU, underlayMTU: s.UnderlayMTU, encap: s.Encapsulation, tunnelPort: s.TunnelPort,
		failNext: map[v1alpha1.StepAction]int{}, configLock: make(chan struct{}, 1)}
	for i := range s.Pods {
		n.podMTU[i], n.hostEndMTU[i] = s.MTU, s.MTU
	}
	// Installed: netshift wrote the node's configuration when it was set up.
	n.config = &nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{MTU: int32(s.MTU), Encapsulation: s.Encapsulation,
		TunnelPort: int32(s.TunnelPort)}}
	return n
}

// FailStep makes the node's next run of step fail (a fault a test injects).
func (n *Node) FailStep(step v1alpha1.StepAction) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failNext[step]++
}

// Network is what the node carries now: its pods' MTU (0 when they differ),
// its tunnels' port, and the pod MTU its network configuration gives new pods
// (0 when it has none).
func (n *Node) Network() (podMTU, tunnelPort, configMTU int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	podMTU = n.nodePortMTU
	for i := range n.podMTU {
		if n.podMTU[i] != podMTU || n.hostEndMTU[i] != podMTU {
			podMTU = 0
		}
	}
	if n.config != nil {
		configMTU = int(n.config.MTU)
	}
	return podMTU, n.tunnelPort, configMTU
}

// take spends the time an operation takes, drawn from l.
func (n *Node) take(ctx context.Context, l Latency, times int) error {
	n.mu.Lock()
	var d time.Duration
	for range times {
		d += l.Sample(n.rng)
	}
	n.mu.Unlock()
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The node's clock and step timer: Go's timers, shifted by the node's offset.
// Thousands of simulated agents share one process, so no step gets a thread
// or a priority of its own; how late a step starts is then what the process,
// not a node, could do.

// finalApproach is how long before a step's time Approach returns.
const finalApproach = 20 * time.Millisecond

func (n *Node) Now() time.Time { return time.Now().Add(n.offset) }

func (n *Node) Approach(ctx context.Context, at time.Time) error {
	return sleep(ctx, at.Sub(n.Now())-finalApproach)
}

func (n *Node) RunAt(ctx context.Context, at time.Time, fire func(context.Context) (netplugin.Outcome, error)) (nodehost.Run, error) {
	if err := sleep(ctx, at.Sub(n.Now())); err != nil {
		return nodehost.Run{}, err
	}
	r := nodehost.Run{Began: n.Now(), Priority: "simulated"}
	o, err := fire(ctx)
	r.Ended, r.Outcome = n.Now(), o
	return r, err
}

func (n *Node) LinkMTU(link string) (int, error) {
	if link != Underlay {
		return 0, fmt.Errorf("node %s has no interface %s", n.name, link)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.underlayMTU, nil
}

func (n *Node) LinkWithAddress(net.IP) (string, error) { return Underlay, nil }

func (n *Node) UDPPortUser(int) (string, error) { return "", nil }

// IPv6Holder: a simulated node's pods have no IPv6.
func (n *Node) IPv6Holder(context.Context) (string, error) { return "", nil }

func (n *Node) BootID() (string, error) { return n.boot, nil }

func (n *Node) ClockSynced() (bool, error) { return true, nil }

func (n *Node) Config() nodehost.Config { return simConfig{n} }

// simConfig is the node's network configuration, in memory.
type simConfig struct{ n *Node }

func (c simConfig) Name() string { return "node " + c.n.name + "'s network configuration" }

func (c simConfig) Lock(ctx context.Context) (func(), error) {
	select {
	case c.n.configLock <- struct{}{}:
		return func() { <-c.n.configLock }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c simConfig) Read() (nodeconfig.File, error) {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if c.n.config == nil {
		return nodeconfig.File{}, fmt.Errorf("%s: %w", c.Name(), fs.ErrNotExist)
	}
	return *c.n.config, nil
}

func (c simConfig) Write(f nodeconfig.File) error {
	if err := c.n.take(context.Background(), c.n.timings.ConfigWrite, 1); err != nil {
		return err
	}
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.n.config = &f
	return nil
}

// errInjected is a step failure a test asked for.
var errInjected = errors.New("failed on purpose (a scale test's fault injection)")
