//go:build lab

package main

import (
	"os"
	"path/filepath"

	"netshift.io/netshift/internal/lab/labcni"
)

// A lab build is also the lab's stand-in network plugin: the lab installs
// this binary on each node as /opt/cni/bin/netshift-lab-cni.
func init() {
	if filepath.Base(os.Args[0]) == labcni.Name {
		labcni.Main()
		os.Exit(0)
	}
}
