package agent

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/netplugin"
)

// alignEvery is how often the agent checks that every pod of its node has
// the node's MTU. A pod set up with the old configuration just before a
// change rewrote it is listed by the runtime only once its sandbox runs,
// which on a loaded node can be seconds later than the change's own
// alignment: this pass catches it, and any pod whose MTU drifted otherwise.
const alignEvery = 5 * time.Second

// podAligner is the agent's periodic alignment (a controller-runtime Runnable).
type podAligner struct{ a *Agent }

func (p podAligner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("align").WithValues("node", p.a.Node)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(alignEvery):
		}
		if o, err := p.a.alignNow(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // the agent stops: no failure to report
			}
			logger.Error(err, "aligning the node's pods to its MTU")
		} else if o.Changed > 0 {
			logger.Info("pods aligned to the node's MTU", "changed", o.Changed, "skipped", o.Skipped)
		}
	}
}

// alignNow aligns the node's pods to its configuration's MTU, unless a live
// change is under way on the node: between its steps the pods are meant to
// differ from the configuration, which the change rewrites last.
func (a *Agent) alignNow(ctx context.Context) (o netplugin.Outcome, err error) {
	// Not once netshift is off the node: its lock would be made again.
	_, err = a.gate.do(func() error {
		o, err = a.alignNowOn(ctx)
		return err
	})
	return o, err
}

func (a *Agent) alignNowOn(ctx context.Context) (netplugin.Outcome, error) {
	var nns v1alpha1.NetshiftNodeState
	if err := a.Client.Get(ctx, types.NamespacedName{Name: a.Node}, &nns); err == nil {
		plan, err := a.planOf(ctx, &nns)
		if err != nil {
			return netplugin.Outcome{}, err
		}
		if rep := nns.Status.LiveChange; plan != nil && (rep == nil || rep.ID != plan.ID || !rep.Done) {
			return netplugin.Outcome{}, nil
		}
	}
	c := a.config()
	if c == nil {
		return netplugin.Outcome{}, nil
	}
	unlock, err := a.lockConfig(ctx)
	if err != nil {
		return netplugin.Outcome{}, err
	}
	defer unlock()
	f, err := c.Read()
	if errors.Is(err, fs.ErrNotExist) {
		return netplugin.Outcome{}, nil // netshift has not configured this node yet
	}
	if err != nil {
		return netplugin.Outcome{}, err
	}
	return a.Plugin.Align(ctx, int(f.MTU))
}
