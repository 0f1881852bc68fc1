package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
)

// changeTargets are what `netshift change` changes, with the spec field and its range.
var changeTargets = map[string]struct {
	kind     v1alpha1.ChangeKind
	field    string
	min, max int64
}{
	"mtu":         {v1alpha1.ChangeMTU, "spec.mtu", 576, 9158},
	"vxlan-port":  {v1alpha1.ChangeVXLANPort, "spec.vxlanPort", 1, 65535},
	"geneve-port": {v1alpha1.ChangeGenevePort, "spec.genevePort", 1, 65535},
}

func changeCmd(g *globals) *cobra.Command {
	var dryRun, noWait bool
	var timeout time.Duration
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "change (mtu|vxlan-port|geneve-port) VALUE",
		Short: "Start a live change of the pod MTU or a tunnel port and follow it to its end (or, with --dry-run, check it on every node)",
		Long: `Start a live change and follow it: every node checks its preconditions, then all apply
their steps at one synchronized time. With --dry-run every node checks its preconditions and
says what its steps would change; nothing on any node is touched and the spec keeps its values.`,
		Example: "  netshift change mtu 1350 --dry-run\n  netshift change mtu 1350\n  netshift change vxlan-port 4790 --no-wait",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, ok := changeTargets[args[0]]
			if !ok {
				return usagef("%q: want mtu, vxlan-port or geneve-port", args[0])
			}
			value, err := strconv.ParseInt(args[1], 10, 32)
			if err != nil || value < target.min || value > target.max {
				return usagef("%s %q: want a number from %d to %d (%s)", args[0], args[1], target.min, target.max, target.field)
			}
			if timeout <= 0 {
				return usagef("--timeout %s: want more than 0", timeout)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			r := changeRun{c: c, out: cmd.OutOrStdout(), kind: target.kind, value: int32(value), dryRun: dryRun, output: output}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return r.run(ctx, !noWait)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "check the change on every node and show each node's preconditions and what its steps would change; touch nothing")
	f.BoolVar(&noWait, "no-wait", false, "ask for the change and return (follow it with netshift status -w 1s)")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "how long to follow the change before giving up following it (the change goes on)")
	addOutputFlag(f, &output) // json and yaml: the change and each node's report, at its end
	return cmd
}

// changeRun is one `netshift change`.
type changeRun struct {
	c      client.Client
	out    io.Writer
	kind   v1alpha1.ChangeKind
	value  int32
	dryRun bool
	output outputFormat
}

func (r changeRun) run(ctx context.Context, wait bool) error {
	var before int64
	var asked bool
	var first *v1alpha1.NetshiftNetworkSpec // as it was read before any edit
	// The operator writes the NetshiftNetwork's status while we decide, so an edit made on a
	// copy it has since changed is refused; the decision is made again on the fresh copy.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		before, asked, err = r.ask(ctx, &first)
		return err
	})
	if err != nil || !asked {
		return err
	}
	if !wait {
		fmt.Fprintf(r.out, "asked for %s %d; follow it with `netshift status -w 1s`\n", r.kind, r.value)
		return nil
	}
	ch, err := r.follow(ctx, before)
	if r.dryRun {
		// The spec goes back to asking for nothing, whatever the dry run found.
		if cerr := r.clearDryRun(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	if err != nil {
		return err
	}
	return r.finish(ctx, ch)
}

// ask edits the spec to ask for the change, unless it is in force already
// (asked false). before is the generation the change must come after. first
// keeps the spec as the first try read it, for what was put back.
func (r changeRun) ask(ctx context.Context, first **v1alpha1.NetshiftNetworkSpec) (before int64, asked bool, err error) {
	var cn v1alpha1.NetshiftNetwork
	if err := r.c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, false, errors.New("no NetshiftNetwork yet: the operator creates it once every node reported its network (`netshift status` says what it waits for)")
		}
		return 0, false, err
	}
	if ch := cn.Status.Change; ch != nil && ch.Phase.Active() {
		return 0, false, fmt.Errorf("change %s is in progress (%s: %s): wait for it, or `netshift abort` it before its T0", ch.ID, ch.Phase, ch.Message)
	}
	if cn.Status.Applied == nil {
		return 0, false, errors.New("the operator has not recorded the network in force yet (NetshiftNetwork status.applied): is it running?")
	}
	applied := *cn.Status.Applied
	if *first == nil {
		*first = cn.Spec.DeepCopy()
	}
	if current(r.kind, applied) == r.value && !r.dryRun {
		if err := r.patch(ctx, &cn, func(spec *v1alpha1.NetshiftNetworkSpec) { r.putBack(spec, applied) }); err != nil {
			return 0, false, err
		}
		r.sayPutBack(**first, applied)
		fmt.Fprintf(r.out, "%s is %d already; nothing to change\n", r.kind, r.value)
		return 0, false, nil
	}
	// What is asked must be a new edit: a change asked before that did not go through is asked
	// again only by one, and a dry run runs once per edit.
	if wanted(r.kind, cn.Spec) == r.value || cn.Spec.DryRun != nil {
		if err := r.patch(ctx, &cn, func(spec *v1alpha1.NetshiftNetworkSpec) { r.putBack(spec, applied); spec.DryRun = nil }); err != nil {
			return 0, false, err
		}
	}
	before = cn.Generation
	// Every other value the spec asks for and is not in force (a failed change) goes back to
	// the value in force: an edit asks again for all the spec says, and only this is wanted.
	err = r.patch(ctx, &cn, func(spec *v1alpha1.NetshiftNetworkSpec) {
		r.putBack(spec, applied)
		if r.dryRun {
			spec.DryRun = dryRunRequest(r.kind, r.value)
		} else {
			setSpec(spec, r.kind, r.value)
		}
	})
	if err != nil {
		return 0, false, err
	}
	r.sayPutBack(**first, applied)
	return before, true, nil
}

// patch edits the NetshiftNetwork's spec (an edit that changes nothing is
// not sent).
func (r changeRun) patch(ctx context.Context, cn *v1alpha1.NetshiftNetwork, edit func(*v1alpha1.NetshiftNetworkSpec)) error {
	before := cn.DeepCopy()
	edit(&cn.Spec)
	if equality.Semantic.DeepEqual(before.Spec, cn.Spec) {
		return nil
	}
	if err := r.c.Patch(ctx, cn, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("NetshiftNetwork %s: ask for %s %d: %w", cn.Name, r.kind, r.value, err)
	}
	return nil
}

// follow waits for the change this run asked for, by an edit after
// generation before, to end, printing each new state of it.
func (r changeRun) follow(ctx context.Context, before int64) (*v1alpha1.NetworkChange, error) {
	last := ""
	for {
		var cn v1alpha1.NetshiftNetwork
		if err := r.c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
			return nil, err
		}
		ch := cn.Status.Change
		if ch != nil && ch.Generation > before && ch.DryRun == r.dryRun && ch.Kind == r.kind && ch.To == r.value {
			line := fmt.Sprintf("%s %s: %d/%d nodes ready, %d applied, %d failed: %s", ch.ID, ch.Phase, ch.Ready, ch.Nodes, ch.Applied, ch.Failed, ch.Message)
			if line != last && r.output == outputText {
				fmt.Fprintf(r.out, "%s %s\n", time.Now().Format(time.TimeOnly), line)
				last = line
			}
			if !ch.Phase.Active() && len(ch.Converging) == 0 && len(ch.Rebooting) == 0 {
				return ch, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped following (the change goes on; `netshift status` shows it): %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (r changeRun) clearDryRun(ctx context.Context) error {
	var cn v1alpha1.NetshiftNetwork
	if err := r.c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn); err != nil {
		return err
	}
	if cn.Spec.DryRun == nil {
		return nil
	}
	patch := client.MergeFrom(cn.DeepCopy())
	cn.Spec.DryRun = nil
	if err := r.c.Patch(ctx, &cn, patch); err != nil {
		return fmt.Errorf("remove spec.dryRun (do it by hand: it asks for nothing more): %w", err)
	}
	return nil
}

// finish prints the end of a change (a dry run's per-node report) and says
// whether it did what was asked.
func (r changeRun) finish(ctx context.Context, ch *v1alpha1.NetworkChange) error {
	reports, err := r.reports(ctx, ch.ID)
	if err != nil {
		return err
	}
	result := struct {
		Change *v1alpha1.NetworkChange               `json:"change"`
		Nodes  map[string]*v1alpha1.LiveChangeReport `json:"nodes"`
	}{ch, reports}
	if err := r.output.write(r.out, result, func(io.Writer) error {
		if ch.DryRun {
			r.writeDryRun(ch, reports)
		}
		return nil
	}); err != nil {
		return err
	}
	switch {
	case ch.DryRun && ch.Failed > 0:
		// The check ran: what it found needs a person (exit 3), like `netshift status`.
		return problems([]string{fmt.Sprintf("dry run %s: %d of %d nodes would stop the change", ch.ID, ch.Failed, ch.Nodes)})
	case ch.DryRun, ch.Phase == v1alpha1.PhaseSucceeded:
		return nil
	}
	return fmt.Errorf("change %s ended %s: %s", ch.ID, ch.Phase, ch.Message)
}

// reports reads every node's report of change id.
func (r changeRun) reports(ctx context.Context, id string) (map[string]*v1alpha1.LiveChangeReport, error) {
	var states v1alpha1.NetshiftNodeStateList
	if err := r.c.List(ctx, &states); err != nil {
		return nil, err
	}
	out := map[string]*v1alpha1.LiveChangeReport{}
	for i := range states.Items {
		if rep := states.Items[i].Status.LiveChange; rep != nil && rep.ID == id {
			out[states.Items[i].Name] = rep
		} else {
			out[states.Items[i].Name] = nil
		}
	}
	return out, nil
}

func (r changeRun) writeDryRun(ch *v1alpha1.NetworkChange, reports map[string]*v1alpha1.LiveChangeReport) {
	fmt.Fprintf(r.out, "\n%s %d -> %d, checked on %d nodes (nothing was changed)\n", ch.Kind, ch.From, ch.To, len(reports))
	var steps []string
	for _, s := range ch.Steps {
		steps = append(steps, string(s))
	}
	if len(steps) == 0 {
		steps = []string{"(the operator did not say)"}
	}
	fmt.Fprintf(r.out, "steps on every node, in order, from one synchronized T0: %s\n\n", strings.Join(steps, ", "))
	tw := tabwriter.NewWriter(r.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tREADY\tPRECONDITIONS\tWOULD CHANGE")
	nodes := make([]string, 0, len(reports))
	for n := range reports {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		rep := reports[n]
		if rep == nil {
			fmt.Fprintf(tw, "%s\tno\tno answer\t-\n", n)
			continue
		}
		pre := "ok"
		if len(rep.Problems) > 0 {
			pre = strings.Join(rep.Problems, "; ")
		}
		if len(rep.Warnings) > 0 {
			pre += " (warning: " + strings.Join(rep.Warnings, "; ") + ")"
		}
		ready := "no"
		if rep.Ready {
			ready = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, ready, pre, orDash(strings.Join(rep.WouldChange, "; ")))
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func current(kind v1alpha1.ChangeKind, a v1alpha1.AppliedNetwork) int32 {
	switch kind {
	case v1alpha1.ChangeMTU:
		return a.MTU
	case v1alpha1.ChangeVXLANPort:
		return a.VXLANPort
	}
	return a.GenevePort
}

// putBack sets every value the spec asks for but is not in force back to
// the value in force, saying so.
func (r changeRun) putBack(spec *v1alpha1.NetshiftNetworkSpec, applied v1alpha1.AppliedNetwork) {
	for _, kind := range changeKinds {
		if wanted(kind, *spec) != current(kind, applied) {
			setSpec(spec, kind, current(kind, applied))
		}
	}
}

// sayPutBack tells what putBack changed in the spec as it was read, once
// the edit went through (an edit refused for a conflict is made again).
func (r changeRun) sayPutBack(spec v1alpha1.NetshiftNetworkSpec, applied v1alpha1.AppliedNetwork) {
	for _, kind := range changeKinds {
		if asked, in := wanted(kind, spec), current(kind, applied); asked != in {
			fmt.Fprintf(r.out, "%s %d was asked for and is not in force: the spec is put back to %d\n", kind, asked, in)
		}
	}
}

var changeKinds = []v1alpha1.ChangeKind{v1alpha1.ChangeMTU, v1alpha1.ChangeVXLANPort, v1alpha1.ChangeGenevePort}

func wanted(kind v1alpha1.ChangeKind, s v1alpha1.NetshiftNetworkSpec) int32 {
	w := livechange.FromSpec(s)
	return current(kind, v1alpha1.AppliedNetwork{MTU: w.MTU, VXLANPort: w.VXLANPort, GenevePort: w.GenevePort})
}

func setSpec(s *v1alpha1.NetshiftNetworkSpec, kind v1alpha1.ChangeKind, v int32) {
	switch kind {
	case v1alpha1.ChangeMTU:
		s.MTU = &v
	case v1alpha1.ChangeVXLANPort:
		s.VXLANPort = v
	default:
		s.GenevePort = v
	}
}

func dryRunRequest(kind v1alpha1.ChangeKind, v int32) *v1alpha1.DryRunRequest {
	switch kind {
	case v1alpha1.ChangeMTU:
		return &v1alpha1.DryRunRequest{MTU: &v}
	case v1alpha1.ChangeVXLANPort:
		return &v1alpha1.DryRunRequest{VXLANPort: &v}
	}
	return &v1alpha1.DryRunRequest{GenevePort: &v}
}
