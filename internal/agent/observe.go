package agent

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
)

// observeEvery is how often the agent looks at its node's network again: it
// writes only what changed, so a cluster of thousands of nodes costs the API
// server next to nothing once they agree.
const observeEvery = time.Minute

// networkObserver reports the node's network (NetshiftNodeState
// status.network): the operator creates the NetshiftNetwork from the reports.
type networkObserver struct{ a *Agent }

func (o networkObserver) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("observe").WithValues("node", o.a.Node)
	wait := 2 * time.Second // the node's pods and tunnels are being listed at the agent's start
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = observeEvery
		if err := o.a.reportNetwork(ctx); err != nil {
			logger.Error(err, "reporting the node's network")
			wait = 5 * time.Second
		}
	}
}

func (a *Agent) reportNetwork(ctx context.Context) error {
	var nns v1alpha1.NetshiftNodeState
	if err := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &nns); err != nil {
		return err // created by the operator for every Node: look again soon
	}
	if plan, err := a.planOf(ctx, &nns); err != nil || plan != nil {
		return err // between a change's steps the node is meant to differ from itself: look after it
	}
	seen := a.observe(ctx)
	if equality.Semantic.DeepEqual(nns.Status.Network, &seen) {
		return nil
	}
	return a.report(ctx, &nns, func(s *v1alpha1.NetshiftNodeStateStatus) { s.Network = &seen })
}

// observe reads the network the node has now.
func (a *Agent) observe(ctx context.Context) v1alpha1.ObservedNetwork {
	var o v1alpha1.ObservedNetwork
	problem := func(what string, err error) {
		if len(o.Problems) < 8 {
			o.Problems = append(o.Problems, what+": "+err.Error())
		}
	}
	if err := a.observeConfig(&o); err != nil {
		problem("pod MTU", err)
	}
	if err := a.Plugin.Observe(ctx, &o); err != nil {
		problem("network plugin", err)
	}
	if link, err := a.underlayInterface(ctx); err != nil {
		problem("underlay", err)
	} else if mtu, err := a.host().LinkMTU(link); err != nil {
		problem("underlay", err)
	} else {
		o.UnderlayInterface, o.UnderlayMTU = link, int32(mtu)
	}
	return o
}

// observeConfig reads the pod MTU from the node's network configuration,
// which netshift wrote; without one, the plugin's driver reads it from the pods.
func (a *Agent) observeConfig(o *v1alpha1.ObservedNetwork) error {
	c := a.config()
	if c == nil {
		return nil
	}
	f, err := c.Read()
	if err == nil {
		o.MTU, o.MTUFrom = f.MTU, "NetworkConfig"
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
