package simnode

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/nodeconfig"
)

func TestLatencyIsSpreadAroundItsMedianWithItsTail(t *testing.T) {
	l := Latency{Median: time.Millisecond, P99: 10 * time.Millisecond}
	r := rand.New(rand.NewPCG(1, 2))
	var d []time.Duration
	for range 20000 {
		d = append(d, l.Sample(r))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	median, p99 := d[len(d)/2], d[len(d)*99/100]
	if median < 900*time.Microsecond || median > 1100*time.Microsecond {
		t.Errorf("median %s, want about 1ms", median)
	}
	if p99 < 8*time.Millisecond || p99 > 12*time.Millisecond {
		t.Errorf("p99 %s, want about 10ms", p99)
	}
	if (Latency{}).Sample(r) != 0 {
		t.Error("a zero latency takes time")
	}
}

// instant makes every operation take no time: the tests are about state, not timing.
var instant = &Timings{}

func newNode() *Node {
	return New(Spec{Name: "sim-1", Pods: 3, MTU: 1400, UnderlayMTU: 9000, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789, Timings: instant})
}

func fire(t *testing.T, n *Node, action v1alpha1.StepAction, value int32) (netplugin.Outcome, error) {
	t.Helper()
	armed, err := n.Arm(context.Background(), &v1alpha1.LiveChangePlan{}, v1alpha1.ScheduledStep{Action: action, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	defer armed.Release()
	return armed.Fire(context.Background())
}

func TestAnMTUChangeIsCarriedOnceEveryStepRan(t *testing.T) {
	n := newNode()
	if mtu, port, cfg := n.Network(); mtu != 1400 || port != 4789 || cfg != 1400 {
		t.Fatalf("a new node carries MTU %d, port %d, configuration %d", mtu, port, cfg)
	}
	o, err := fire(t, n, netplugin.StepPodMTU, 1300)
	if err != nil || o.Changed != 3 {
		t.Fatalf("pods' MTU step: changed %d, %v; want 3 interfaces", o.Changed, err)
	}
	if mtu, _, _ := n.Network(); mtu != 0 {
		t.Errorf("pods and their node ends differ, yet the node reports one MTU %d", mtu)
	}
	if err := n.Carries(context.Background(), v1alpha1.NodeNetworkConfig{MTU: 1300}); err == nil {
		t.Error("Carries passed halfway through the change")
	}
	for _, step := range []v1alpha1.StepAction{netplugin.StepHostVethMTU, netplugin.StepNodePortMTU} {
		if _, err := fire(t, n, step, 1300); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Carries(context.Background(), v1alpha1.NodeNetworkConfig{MTU: 1300}); err != nil {
		t.Errorf("after every step: %v", err)
	}
	if _, err := n.Arm(context.Background(), &v1alpha1.LiveChangePlan{}, v1alpha1.ScheduledStep{Action: "Reboot"}); err == nil {
		t.Error("an unknown step was armed")
	}
}

func TestAFailingStepFailsOnceAndChangesNothing(t *testing.T) {
	n := newNode()
	n.FailStep(netplugin.StepTunnelPort)
	if _, err := fire(t, n, netplugin.StepTunnelPort, 4790); err == nil {
		t.Fatal("the step asked to fail passed")
	}
	if _, port, _ := n.Network(); port != 4789 {
		t.Errorf("a failed step changed the port to %d", port)
	}
	if _, err := fire(t, n, netplugin.StepTunnelPort, 4790); err != nil {
		t.Fatalf("the step failed again: %v", err)
	}
	if _, port, _ := n.Network(); port != 4790 {
		t.Errorf("port %d after the step ran, want 4790", port)
	}
}

func TestTheConfigurationIsLockedReadAndWritten(t *testing.T) {
	n := New(Spec{Name: "sim-2", Timings: instant})
	n.config = nil // a node netshift has not configured yet
	c := n.Config()
	if _, err := c.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading a node's missing configuration: %v, want fs.ErrNotExist", err)
	}
	unlock, err := c.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	held, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Lock(held); err == nil {
		t.Error("the configuration was locked twice at once")
	}
	if err := c.Write(nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{MTU: 1300}, Change: "mtu-1"}); err != nil {
		t.Fatal(err)
	}
	unlock()
	if f, err := c.Read(); err != nil || f.MTU != 1300 || f.Change != "mtu-1" {
		t.Errorf("read back %+v, %v", f, err)
	}
}

func TestTheClockRunsAStepAtItsTimeByTheNodesOwnClock(t *testing.T) {
	n := New(Spec{Name: "sim-3", ClockOffset: -time.Hour, Timings: instant})
	if d := time.Since(n.Now()); d < 59*time.Minute {
		t.Fatalf("a node an hour behind reads %s", n.Now())
	}
	at := n.Now().Add(30 * time.Millisecond)
	if err := n.Approach(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	run, err := n.RunAt(context.Background(), at, func(context.Context) (netplugin.Outcome, error) { return netplugin.Outcome{Changed: 1}, nil })
	if err != nil || run.Outcome.Changed != 1 {
		t.Fatalf("run %+v, %v", run, err)
	}
	// By the machine's clock the step's time is an hour ago: run on that clock it would begin at
	// once, before its time. How late it may be on a loaded machine is not this test's to say.
	if late := run.Began.Sub(at); late < 0 || late > 10*time.Second {
		t.Errorf("the step began %s after its time", late)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if run, err := n.RunAt(ctx, n.Now().Add(time.Hour), nil); err == nil || !run.Began.IsZero() {
		t.Error("a cancelled wait ran its step")
	}
}
