package kubenode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"netshift.io/netshift/internal/atomicfile"
)

// SystemCNIPlugins is where Debian's containernetworking-plugins installs.
const SystemCNIPlugins = "/usr/lib/cni"

// InstallCNI puts the node's CNI configuration into its layout's
// configuration directory, once (the only one there: containerd uses the
// first), and the plugins into its binary directory, each given as name ->
// file on the machine. The configuration is a list of one plugin; with
// CNIConf set it goes in as that plugin's single .conf, as OVN-Kubernetes
// writes its own.
func (n Node) InstallCNI(conflist []byte, plugins map[string]string) error {
	conf := n.Path(n.layout().CNIConfDir)
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return err
	}
	name, data, err := n.cniFile(conflist)
	if err != nil {
		return fmt.Errorf("node %s: CNI configuration: %w", n.Name, err)
	}
	// Written at the node's first start only: the node's configuration outlives its reboots, as
	// on a machine, with what netshift's agent made of it (netshift-cni chained, or wrapping).
	if err := writeOnce(conf, name, data); err != nil {
		return fmt.Errorf("node %s: CNI configuration: %w", n.Name, err)
	}
	bin := n.Path(n.layout().CNIBinDir)
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

// cniFile is the node's configuration file: the list as it is, or its one
// plugin as a .conf of CNI 0.4.0 (OVN-Kubernetes' version).
func (n Node) cniFile(conflist []byte) (string, []byte, error) {
	if n.CNIFile != "" {
		return n.CNIFile, conflist, nil
	}
	if !n.CNIConf {
		return "10-lab.conflist", conflist, nil
	}
	var list struct {
		Name    string           `json:"name"`
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(conflist, &list); err != nil || len(list.Plugins) != 1 {
		return "", nil, fmt.Errorf("a .conf holds one plugin: the list has %d (%v)", len(list.Plugins), err)
	}
	conf := list.Plugins[0]
	conf["name"], conf["cniVersion"] = list.Name, "0.4.0"
	data, err := json.MarshalIndent(conf, "", "  ")
	return "10-lab.conf", data, err
}

// writeOnce writes dir/name unless the directory holds the plugin's
// configuration already, as a .conf or a .conflist of name's base name: a
// .conflist with netshift-cni chained into it, or a .conf netshift left as
// it is (its list of it, 10-lab-netshift.conflist, is another base name).
func writeOnce(dir, name string, data []byte) error {
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".conflist"), ".conf")
	for _, ext := range []string{".conf", ".conflist"} {
		if _, err := os.Stat(filepath.Join(dir, base+ext)); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return atomicfile.Write(filepath.Join(dir, name), data, 0o644)
}
