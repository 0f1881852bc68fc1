package cni

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"netshift.io/netshift/internal/atomicfile"
)

// PluginName is the plugin's type in a CNI configuration list.
const PluginName = "netshift-cni"

// Chain returns the configuration list with netshift-cni appended to its
// plugins (the network plugin's own entries kept as they are), and whether it
// changed: a list that already ends with it is returned as it is.
func Chain(conflist []byte, networkConfig string) ([]byte, bool, error) {
	var list map[string]json.RawMessage
	if err := json.Unmarshal(conflist, &list); err != nil {
		return nil, false, fmt.Errorf("not a CNI configuration list: %w", err)
	}
	var plugins []map[string]any
	if err := json.Unmarshal(list["plugins"], &plugins); err != nil || len(plugins) == 0 {
		return nil, false, fmt.Errorf("not a CNI configuration list: no plugins")
	}
	for i, p := range plugins {
		if p["type"] == PluginName {
			if i == len(plugins)-1 && p["networkConfig"] == networkConfig {
				return conflist, false, nil
			}
			plugins = append(plugins[:i], plugins[i+1:]...) // moved to the end, as configured now
			break
		}
	}
	plugins = append(plugins, map[string]any{"type": PluginName, "networkConfig": networkConfig})
	raw, err := json.Marshal(plugins)
	if err != nil {
		return nil, false, err
	}
	list["plugins"] = raw
	var buf bytes.Buffer
	out, err := json.Marshal(list)
	if err != nil {
		return nil, false, err
	}
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return nil, false, err
	}
	return append(buf.Bytes(), '\n'), true, nil
}

// Install puts the plugin binary into the node's CNI binary directory and
// chains it into the node's CNI configuration (the first .conflist, which is
// the one the runtime uses). It changes nothing that is already as wanted,
// so an agent may run it at start and every now and then: a network plugin
// that rewrote its configuration gets netshift-cni chained again.
func Install(confDir, binDir, plugin, networkConfig string) (changed bool, err error) {
	src, err := os.ReadFile(plugin)
	if err != nil {
		return false, fmt.Errorf("install %s: %w", PluginName, err)
	}
	dst := filepath.Join(binDir, PluginName)
	if cur, err := os.ReadFile(dst); err != nil || !bytes.Equal(cur, src) {
		if err := atomicfile.Write(dst, src, 0o755); err != nil {
			return false, fmt.Errorf("install %s into %s: %w", PluginName, binDir, err)
		}
		changed = true
	}
	entries, err := os.ReadDir(confDir)
	if err != nil {
		return changed, fmt.Errorf("CNI configuration directory %s: %w", confDir, err)
	}
	var lists []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".conflist") {
			lists = append(lists, e.Name())
		}
	}
	if len(lists) == 0 {
		return changed, fmt.Errorf("no CNI configuration list in %s yet (the network plugin writes one)", confDir)
	}
	sort.Strings(lists)
	path := filepath.Join(confDir, lists[0])
	cur, err := os.ReadFile(path)
	if err != nil {
		return changed, err
	}
	next, diff, err := Chain(cur, networkConfig)
	if err != nil {
		return changed, fmt.Errorf("%s: %w", path, err)
	}
	if diff {
		if err := atomicfile.Write(path, next, 0o644); err != nil {
			return changed, fmt.Errorf("chain %s into %s: %w", PluginName, path, err)
		}
	}
	return changed || diff, nil
}
