package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"netshift.io/netshift/internal/version"
)

func versionCmd() *cobra.Command {
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print netshift's version (the image tag config/default installs) and how it was built",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version.Get()
			return output.write(cmd.OutOrStdout(), v, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, v)
				return err
			})
		},
	}
	addOutputFlag(cmd.Flags(), &output)
	return cmd
}
