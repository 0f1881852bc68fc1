package kubenode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"netshift.io/netshift/internal/atomicfile"
)

// SystemCNIPlugins is where Debian's containernetworking-plugins installs.
const SystemCNIPlugins = "/usr/lib/cni"

// InstallCNI puts the node's CNI configuration list into its /etc/cni/net.d, once
// (the only one there: containerd uses the first) and the plugins into its
// /opt/cni/bin, each given as name -> file on the machine.
func (n Node) InstallCNI(conflist []byte, plugins map[string]string) error {
	conf := n.Path("/etc/cni/net.d")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return err
	}
	// Written at the node's first start only: the node's configuration outlives its reboots, as
	// on a machine, with what netshift's agent made of it (netshift-cni chained, or wrapping).
	list := filepath.Join(conf, "10-lab.conflist")
	if _, err := os.Stat(list); errors.Is(err, fs.ErrNotExist) {
		if err := atomicfile.Write(list, conflist, 0o644); err != nil {
			return fmt.Errorf("node %s: CNI configuration: %w", n.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("node %s: CNI configuration: %w", n.Name, err)
	}
	bin := n.Path("/opt/cni/bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for name, src := range plugins {
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("node %s: CNI plugin %s: %w", n.Name, name, err)
		}
		if err := atomicfile.Write(filepath.Join(bin, name), data, 0o755); err != nil {
			return fmt.Errorf("node %s: CNI plugin %s: %w", n.Name, name, err)
		}
	}
	return nil
}
