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
// changed: a list that already ends with it is returned as it is. With pool
// set, netshift-cni also wraps the list's first entry, the network plugin's
// main one, to wire the pods of pool-enabled namespaces itself (pool's
// Delegate is filled from that entry); without, a wrapped entry is restored.
func Chain(conflist []byte, networkConfig string, pool *PoolConfig) ([]byte, bool, error) {
	var list map[string]json.RawMessage
	if err := json.Unmarshal(conflist, &list); err != nil {
		return nil, false, fmt.Errorf("not a CNI configuration list: %w", err)
	}
	var plugins []map[string]any
	if err := json.Unmarshal(list["plugins"], &plugins); err != nil || len(plugins) == 0 {
		return nil, false, fmt.Errorf("not a CNI configuration list: no plugins")
	}
	before, err := json.Marshal(plugins)
	if err != nil {
		return nil, false, err
	}
	if main := plugins[0]; main["type"] == PluginName && main["pool"] != nil {
		// Unwrapped first, to be wrapped again as configured now.
		wrapped, _ := main["pool"].(map[string]any)
		delegate, ok := wrapped["delegate"].(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("the first plugin is %s with a pool but no delegate: restore the network plugin's configuration", PluginName)
		}
		plugins[0] = delegate
	}
	for i := 0; i < len(plugins); i++ {
		if plugins[i]["type"] == PluginName {
			plugins = append(plugins[:i], plugins[i+1:]...)
			i--
		}
	}
	if len(plugins) == 0 {
		return nil, false, fmt.Errorf("not a CNI configuration list: only %s in it, no network plugin", PluginName)
	}
	if pool != nil {
		p := *pool
		p.Delegate = plugins[0]
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, false, err
		}
		var asMap map[string]any
		if err := json.Unmarshal(raw, &asMap); err != nil {
			return nil, false, err
		}
		plugins[0] = map[string]any{"type": PluginName, "networkConfig": networkConfig, "pool": asMap}
	}
	plugins = append(plugins, map[string]any{"type": PluginName, "networkConfig": networkConfig})
	after, err := json.Marshal(plugins)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(before, after) {
		return conflist, false, nil
	}
	list["plugins"] = after
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
func Install(confDir, binDir, plugin, networkConfig string, pool *PoolConfig) (changed bool, err error) {
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
	next, diff, err := Chain(cur, networkConfig, pool)
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
