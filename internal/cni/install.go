package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"

	"netshift.io/netshift/internal/atomicfile"
)

// PluginName is the plugin's type in a CNI configuration list.
const PluginName = "netshift-cni"

// ConvertedFrom is the top-level key under which a configuration list that
// Install made from a single plugin's file names that file, so Uninstall can
// write it back. libcni reads only a list's own keys (name, cniVersion,
// cniVersions, disableCheck, disableGC, loadOnlyInlinedPlugins, plugins) and
// hands each plugin its own entry: neither the runtime nor a plugin sees it.
const ConvertedFrom = "netshift.io/converted-from"

// Chain returns the configuration list with netshift-cni appended to its
// plugins (the network plugin's own entries kept as they are), and whether it
// changed: a list that already ends with it is returned as it is. With pool
// set, netshift-cni also wraps the list's first entry, the network plugin's
// main one, to wire the pods of pool-enabled namespaces itself (pool's
// Delegate is filled from that entry); without, a wrapped entry is restored.
// A list the runtime could not load is refused, as libcni refuses it.
func Chain(conflist []byte, networkConfig string, pool *PoolConfig) ([]byte, bool, error) {
	if _, err := libcni.NetworkConfFromBytes(conflist); err != nil {
		return nil, false, fmt.Errorf("not a CNI configuration list: %w", err)
	}
	list, plugins, err := decodeList(conflist)
	if err != nil {
		return nil, false, err
	}
	if len(plugins) == 0 {
		return nil, false, errors.New("not a CNI configuration list: no plugins")
	}
	before, err := json.Marshal(plugins)
	if err != nil {
		return nil, false, err
	}
	// Unwrapped first, to be wrapped again as configured now.
	if plugins, err = unchain(plugins); err != nil {
		return nil, false, err
	}
	if pool != nil {
		if plugins[0], err = wrap(plugins[0], networkConfig, *pool); err != nil {
			return nil, false, err
		}
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
	out, err := encode(list)
	return out, err == nil, err
}

// unchain takes netshift-cni out of a list's plugins: a wrapped main entry
// gives its delegate back, and its chained entries go.
func unchain(plugins []map[string]any) ([]map[string]any, error) {
	if main := plugins[0]; main["type"] == PluginName && main["pool"] != nil {
		wrapped, _ := main["pool"].(map[string]any)
		delegate, ok := wrapped["delegate"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the first plugin is %s with a pool but no delegate: restore the network plugin's configuration", PluginName)
		}
		plugins[0] = delegate
	}
	kept := plugins[:0]
	for _, p := range plugins {
		if p["type"] != PluginName {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("not a CNI configuration list: only %s in it, no network plugin", PluginName)
	}
	return kept, nil
}

// wrap makes netshift-cni the list's main entry, carrying the network
// plugin's own (main) as its pool's delegate.
func wrap(main map[string]any, networkConfig string, pool PoolConfig) (map[string]any, error) {
	pool.Delegate = main
	raw, err := json.Marshal(pool)
	if err != nil {
		return nil, err
	}
	var asMap map[string]any
	if err := decode(raw, &asMap); err != nil {
		return nil, err
	}
	return map[string]any{"type": PluginName, "networkConfig": networkConfig, "pool": asMap}, nil
}

// Convert makes a configuration list of a single plugin's configuration (a
// .conf or .json file, named file) as libcni's ConfListFromConf does when a
// runtime loads such a file: the list takes its name and cniVersion, and its
// whole object, name and cniVersion included, is the list's one plugin (the
// runtime gives each plugin the list's name and cniVersion anyway, so the
// plugin is called exactly as before). The list names file under
// ConvertedFrom.
func Convert(conf []byte, file string) ([]byte, error) {
	var obj map[string]any
	if err := decode(conf, &obj); err != nil {
		return nil, fmt.Errorf("not a CNI configuration: %w", err)
	}
	parsed, err := libcni.NetworkPluginConfFromBytes(conf)
	if _, isList := obj["plugins"]; err != nil && isList {
		return nil, fmt.Errorf("a configuration list in a file the runtime reads as one plugin's configuration (%w): name it .conflist", err)
	}
	if err != nil {
		return nil, fmt.Errorf("not a CNI configuration: %w", err)
	}
	if parsed.Network.Type == PluginName {
		return nil, fmt.Errorf("its type is %s, which chains after a network plugin and is none", PluginName)
	}
	name, version, from := mustJSON(parsed.Network.Name), mustJSON(parsed.Network.CNIVersion), mustJSON(file)
	plugins, err := json.Marshal([]any{obj})
	if err != nil {
		return nil, err
	}
	return encode(map[string]json.RawMessage{"name": name, "cniVersion": version, ConvertedFrom: from, "plugins": plugins})
}

// Install puts the plugin binary into the node's CNI binary directory and
// chains it into the node's CNI configuration: the file the runtime uses
// (see confFiles). A single plugin's file (.conf, .json) cannot hold a chain,
// so it is converted into a list of the same base name, which replaces it.
// It changes nothing that is already as wanted, so an agent may run it at
// start and every now and then: a network plugin that rewrote its
// configuration gets netshift-cni chained again. A configuration it refuses
// is left as it is, and the binary is installed only with a configuration to
// chain it into.
func Install(confDir, binDir, plugin, networkConfig string, pool *PoolConfig) (changed bool, err error) {
	plan, err := planInstall(confDir, networkConfig, pool)
	if err != nil {
		return false, err
	}
	// The binary goes first: a runtime refuses a configuration whose plugin is missing.
	if changed, err = installBinary(plugin, binDir); err != nil {
		return changed, err
	}
	wrote, err := plan.apply()
	return changed || wrote, err
}

func installBinary(plugin, binDir string) (bool, error) {
	src, err := os.ReadFile(plugin)
	if err != nil {
		return false, fmt.Errorf("install %s: %w", PluginName, err)
	}
	dst := filepath.Join(binDir, PluginName)
	if cur, err := os.ReadFile(dst); err == nil && bytes.Equal(cur, src) {
		return false, nil
	}
	if err := atomicfile.Write(dst, src, 0o755); err != nil {
		return false, fmt.Errorf("install %s into %s: %w", PluginName, binDir, err)
	}
	return true, nil
}

// planInstall decides what chaining netshift-cni into the runtime's file
// writes, reading only.
func planInstall(confDir, networkConfig string, pool *PoolConfig) (confPlan, error) {
	files, err := confFiles(confDir)
	if err != nil {
		return confPlan{}, err
	}
	if len(files) == 0 {
		return confPlan{}, fmt.Errorf("no CNI configuration in %s yet (the network plugin writes one)", confDir)
	}
	first := files[0]
	data, mode, err := readConf(first)
	if err != nil {
		return confPlan{}, err
	}
	if filepath.Ext(first) == ".conflist" {
		next, diff, err := Chain(data, networkConfig, pool)
		if err != nil {
			return confPlan{}, fmt.Errorf("%s: %w", first, err)
		}
		if !diff {
			return confPlan{}, nil
		}
		return confPlan{writes: []confWrite{{first, next, mode}}}, nil
	}
	return planConversion(files, data, mode, networkConfig, pool)
}

// planConversion replaces the runtime's file, a single plugin's, with a list
// of the same base name: written before the file goes, so the runtime always
// has a configuration. A list left from an earlier conversion is
// overwritten: its network plugin has written its file again since.
func planConversion(files []string, data []byte, mode os.FileMode, networkConfig string, pool *PoolConfig) (confPlan, error) {
	first := files[0]
	list := strings.TrimSuffix(first, filepath.Ext(first)) + ".conflist"
	if err := mayConvertInto(files, list); err != nil {
		return confPlan{}, err
	}
	converted, err := Convert(data, filepath.Base(first))
	if err != nil {
		return confPlan{}, fmt.Errorf("%s: %w", first, err)
	}
	next, _, err := Chain(converted, networkConfig, pool)
	if err != nil {
		return confPlan{}, fmt.Errorf("%s: %w", first, err)
	}
	return confPlan{writes: []confWrite{{list, next, mode}}, removes: []string{first}}, nil
}

// mayConvertInto checks that the list converted from files[0] would be what
// the runtime loads once files[0] is gone, and that it replaces no list but
// one an earlier conversion of files[0] made.
func mayConvertInto(files []string, list string) error {
	first := files[0]
	for _, f := range files[1:] {
		if f < list {
			return fmt.Errorf("%s: converted into %s, it would come after %s, which the runtime would load instead: rename one of them", first, filepath.Base(list), filepath.Base(f))
		}
		if f != list {
			continue
		}
		cur, _, err := readConf(list)
		if err != nil {
			return err
		}
		if from, _ := convertedFrom(cur); from != filepath.Base(first) {
			return fmt.Errorf("%s: converted into a list, it would overwrite %s, which netshift did not make from it: rename one of them", first, filepath.Base(list))
		}
	}
	return nil
}
