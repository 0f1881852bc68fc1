package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/status"
)

func statusCmd(g *globals) *cobra.Command {
	var output string
	var watch time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each pool, its nodes, and their drain and sync states",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			for {
				r, err := status.Gather(cmd.Context(), c)
				if err != nil {
					return err
				}
				if output == "json" {
					err = r.WriteJSON(cmd.OutOrStdout())
				} else {
					if watch > 0 {
						fmt.Fprintf(cmd.OutOrStdout(), "--- %s\n", time.Now().Format(time.TimeOnly))
					}
					err = r.WriteText(cmd.OutOrStdout())
				}
				if err != nil || watch <= 0 {
					return err
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(watch):
				}
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().DurationVarP(&watch, "watch", "w", 0, "print again every interval (e.g. 1s) until interrupted")
	return cmd
}
