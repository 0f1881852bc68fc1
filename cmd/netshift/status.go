package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/status"
)

func statusCmd(g *globals) *cobra.Command {
	var output outputFormat
	var watch time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each pool, its nodes, and their drain and sync states",
		Long: `Shows each pool, its nodes, and their drain and sync states, the live change and the zone
rollout. Exits 3 when what it shows needs a person (a change degraded or rolling back; a node
held, silent, failed or blocked; a drain given up or over its timeout; an invalid pool or zone
configuration). With --watch it prints until interrupted, then exits with the code of the last
report it printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var last error // the verdict of the last report printed
			printed := false
			for {
				r, err := status.Gather(ctx, c)
				if err != nil {
					if ctx.Err() != nil && printed {
						return last // interrupted while watching
					}
					return err
				}
				if err := printStatus(cmd.OutOrStdout(), output, r, watch > 0); err != nil {
					return err
				}
				last, printed = problems(r.Faults()), true
				if watch <= 0 {
					return last
				}
				select {
				case <-ctx.Done():
					return last
				case <-time.After(watch):
				}
			}
		},
	}
	addOutputFlag(cmd.Flags(), &output)
	cmd.Flags().DurationVarP(&watch, "watch", "w", 0, "print again every interval (e.g. 1s) until interrupted")
	return cmd
}

// printStatus prints one report; while watching, each text report under the
// time it was read and each YAML report as a document of its own.
func printStatus(w io.Writer, o outputFormat, r status.Report, watching bool) error {
	switch {
	case watching && o == outputText:
		fmt.Fprintf(w, "--- %s\n", time.Now().Format(time.TimeOnly))
	case watching && o == outputYAML:
		fmt.Fprintln(w, "---")
	}
	return o.write(w, r, r.WriteText)
}
