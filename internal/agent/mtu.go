package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
)

// maxSkipped bounds the pods a step report lists (the API's limit).
const maxSkipped = 20

// stepOutcome is what an MTU step did on the node.
type stepOutcome struct {
	changed int
	skipped []string
	// committed is when a step that is one OVSDB transaction was committed.
	committed time.Time
	// waited is how long the step's thread waited for a processor from its
	// wake to its end (see threadRunDelay).
	waited time.Duration
}

func (o *stepOutcome) skip(format string, args ...any) {
	o.skipped = append(o.skipped, fmt.Sprintf(format, args...))
}

// report is the list a step result carries: at most maxSkipped, and how many more.
func (o stepOutcome) report() []string {
	if len(o.skipped) <= maxSkipped {
		return o.skipped
	}
	out := append([]string(nil), o.skipped[:maxSkipped-1]...)
	return append(out, fmt.Sprintf("and %d more", len(o.skipped)-maxSkipped+1))
}

// lockConfig holds the node's network configuration exclusively (when the
// node has one): netshift-cni sets up no pod while an MTU step or the
// configuration's rewrite runs, so every pod is either set up before (and
// listed by the step) or after (and reads what the step left).
func (a *Agent) lockConfig(ctx context.Context) (*nodeconfig.Lock, error) {
	if a.NetworkConfig == "" {
		return nil, nil
	}
	l, err := nodeconfig.LockExclusive(ctx, a.NetworkConfig)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.Node, err)
	}
	return l, nil
}

// setPodMTU sets every pod interface of the node to mtu. What a pod does to
// itself (its interface renamed, the pod gone before the step) skips that
// pod and never fails the node: the node is the agent's to keep working.
func (a *Agent) setPodMTU(ctx context.Context, mtu int) (stepOutcome, error) {
	pods, o, err := a.listPods(ctx)
	if err != nil {
		return o, err
	}
	setPods(ctx, pods, mtu, &o)
	return o, nil
}

// listPods lists the node's pods, the outcome starting with those it could not read.
func (a *Agent) listPods(ctx context.Context) ([]PodNetwork, stepOutcome, error) {
	pods, skipped, err := a.Pods.PodNetworks(ctx)
	if err != nil {
		return nil, stepOutcome{}, fmt.Errorf("node %s: list pods: %w", a.Node, err)
	}
	return pods, stepOutcome{skipped: skipped}, nil
}

// setPods sets the pods' interfaces to mtu, skipping (with why) those it cannot set.
func setPods(ctx context.Context, pods []PodNetwork, mtu int, o *stepOutcome) {
	for _, p := range pods {
		for _, ifc := range p.Interfaces {
			if err := setMTU(ctx, p.Netns, ifc, mtu); err != nil {
				o.skip("pod %s: %s: %v", p.Pod, ifc, err)
				continue
			}
			o.changed++
		}
	}
}

// hostEnds are the node ends of the pods' links that the agent may set: those
// the pod's network plugin reported that are, on the node's OVS, a system
// device on the integration bridge or on a per-port bridge, and a veth in the
// node's namespace. Anything else a CNI result names is left alone.
func (a *Agent) hostEnds(ctx context.Context, pods []PodNetwork, o *stepOutcome) ([]string, error) {
	sw, err := a.ovsdb()
	if err != nil {
		return nil, err
	}
	ports, err := sw.PodPorts(ctx, a.integration())
	if err != nil {
		return nil, fmt.Errorf("node %s: pod ports: %w", a.Node, err)
	}
	h, err := netdev.Open(a.NodeNetns)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.Node, err)
	}
	defer h.Close()
	var ends []string
	for _, p := range pods {
		for _, name := range p.HostInterfaces {
			port, ok := ports[name]
			if !ok || port.Type != "" {
				o.skip("pod %s: node end %s is not a pod port of %s or a per-port bridge", p.Pod, name, a.integration())
				continue
			}
			if kind, err := h.Kind(name); err != nil || kind != "veth" {
				o.skip("pod %s: node end %s is not a veth in the node's namespace", p.Pod, name)
				continue
			}
			ends = append(ends, name)
		}
	}
	return ends, nil
}

// setHostVethMTU sets the node ends of the pods' links to mtu.
func (a *Agent) setHostVethMTU(ctx context.Context, mtu int) (stepOutcome, error) {
	pods, o, err := a.listPods(ctx)
	if err != nil {
		return o, err
	}
	ends, err := a.hostEnds(ctx, pods, &o)
	if err != nil {
		return o, err
	}
	var errs []string
	for _, e := range ends {
		if err := setMTU(ctx, a.NodeNetns, e, mtu); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		o.changed++
	}
	if len(errs) > 0 {
		// A node end is the node's own device: failing to set it is the node's failure.
		return o, fmt.Errorf("node %s: %s", a.Node, strings.Join(errs, "; "))
	}
	return o, nil
}

// nodePorts are the node's own ports into the pod network: the internal
// interfaces of its integration bridge, read from its OVS.
func (a *Agent) nodePorts(ctx context.Context) ([]string, error) {
	sw, err := a.ovsdb()
	if err != nil {
		return nil, err
	}
	ports, err := sw.PodPorts(ctx, a.integration())
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.Node, err)
	}
	var names []string
	for name, p := range ports {
		if p.Bridge == a.integration() && p.Type == "internal" {
			names = append(names, name)
		}
	}
	return names, nil
}

func (a *Agent) setNodePortMTU(ctx context.Context, mtu int) (stepOutcome, error) {
	names, err := a.nodePorts(ctx)
	if err != nil {
		return stepOutcome{}, err
	}
	if err := a.Switch.SetMTURequest(ctx, mtu, names...); err != nil {
		return stepOutcome{}, fmt.Errorf("node %s: %w", a.Node, err)
	}
	return stepOutcome{changed: len(names)}, nil
}

// alignPods gives every pod whose interface differs from mtu that MTU, its
// node end first: the pods set up with the old configuration just before a
// change rewrote it (netshift-cni read it under the shared lock, the step's
// listing came before the runtime listed the pod).
func (a *Agent) alignPods(ctx context.Context, mtu int) (stepOutcome, error) {
	pods, o, err := a.listPods(ctx)
	if err != nil {
		return o, err
	}
	var differ []PodNetwork
	for _, p := range pods {
		for _, ifc := range p.Interfaces {
			if got, err := linkMTU(p.Netns, ifc); err == nil && got != mtu {
				differ = append(differ, p)
				break
			}
		}
	}
	if len(differ) == 0 {
		return o, nil
	}
	if a.OVSDB != "" {
		ends, err := a.hostEnds(ctx, differ, &o)
		if err != nil {
			return o, err
		}
		for _, e := range ends {
			_ = setMTU(ctx, a.NodeNetns, e, mtu)
		}
	}
	setPods(ctx, differ, mtu, &o)
	return o, nil
}

// checkPodMTU verifies every pod interface the node can read has mtu.
func (a *Agent) checkPodMTU(ctx context.Context, mtu int) error {
	pods, _, err := a.listPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		for _, ifc := range p.Interfaces {
			if got, err := linkMTU(p.Netns, ifc); err == nil && got != mtu {
				return fmt.Errorf("pod %s: %s has MTU %d, want %d", p.Pod, ifc, got, mtu)
			}
		}
	}
	return nil
}

func (a *Agent) checkHostVethMTU(ctx context.Context, mtu int) error {
	pods, _, err := a.listPods(ctx)
	if err != nil {
		return err
	}
	ends, err := a.hostEnds(ctx, pods, &stepOutcome{})
	if err != nil {
		return err
	}
	for _, e := range ends {
		if got, err := linkMTU(a.NodeNetns, e); err != nil {
			return err
		} else if got != mtu {
			return fmt.Errorf("node end %s has MTU %d, want %d", e, got, mtu)
		}
	}
	return nil
}

func (a *Agent) integration() string {
	if a.IntegrationBridge == "" {
		return "br-int"
	}
	return a.IntegrationBridge
}
