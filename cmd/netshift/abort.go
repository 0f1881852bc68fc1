package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/operator"
)

func abortCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "abort",
		Short: "Cancel the live change in progress before its T0 (nothing is changed) and put the spec back",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			key := client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}
			var cn v1alpha1.NetshiftNetwork
			if err := c.Get(ctx, key, &cn); err != nil {
				return err
			}
			ch := cn.Status.Change
			if ch == nil || !ch.Phase.Active() {
				return fmt.Errorf("no live change is in progress")
			}
			patch := client.MergeFrom(cn.DeepCopy())
			if cn.Annotations == nil {
				cn.Annotations = map[string]string{}
			}
			cn.Annotations[operator.AbortAnnotation] = ch.ID
			if err := c.Patch(ctx, &cn, patch); err != nil {
				return fmt.Errorf("ask the operator to abort %s: %w", ch.ID, err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if err := c.Get(ctx, key, &cn); err != nil {
					return err
				}
				cur := cn.Status.Change
				if cur.ID != ch.ID || !cur.Phase.Active() {
					if cur.Phase != v1alpha1.PhaseAborted {
						return fmt.Errorf("change %s was not aborted: it ended %s: %s", ch.ID, cur.Phase, cur.Message)
					}
					break
				}
				if cur.Phase == v1alpha1.PhaseScheduled && cur.T0 != nil && time.Now().After(cur.T0.Time) {
					return fmt.Errorf("change %s: T0 has passed, too late to abort; edit the value back to change it again", ch.ID)
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("change %s: the operator did not answer the abort in 30 s: %s", ch.ID, cur.Message)
				}
				time.Sleep(100 * time.Millisecond)
			}
			// Put the spec back, so the aborted value is not asked for again.
			patch = client.MergeFrom(cn.DeepCopy())
			a := cn.Status.Applied
			switch ch.Kind {
			case v1alpha1.ChangeMTU:
				cn.Spec.MTU = &a.MTU
			case v1alpha1.ChangeVXLANPort:
				cn.Spec.VXLANPort = a.VXLANPort
			case v1alpha1.ChangeGenevePort:
				cn.Spec.GenevePort = a.GenevePort
			}
			delete(cn.Annotations, operator.AbortAnnotation)
			if err := c.Patch(ctx, &cn, patch); err != nil {
				return fmt.Errorf("change %s aborted, but putting the spec back failed (do it by hand): %w", ch.ID, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "change %s (%s %d -> %d) aborted before T0; nothing was changed; spec put back to %d\n", ch.ID, ch.Kind, ch.From, ch.To, ch.From)
			return nil
		},
	}
}
