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
// Install made of a single plugin's file names that file: Install keeps the
// list following the file, and Uninstall knows the list for netshift's. libcni reads only a list's own keys (name, cniVersion,
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
// plugin is called exactly as with the file). The list names file under
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

// listSuffix ends the name of the list netshift makes of a single plugin's
// file.
const listSuffix = "-netshift.conflist"

// listName is the name of the list netshift makes of the single plugin's
// file conf (.conf or .json): conf's base name and listSuffix. It sorts just
// before conf, as the runtime sorts (sort.Strings on whole names): both
// start with the base name, then '-' (0x2d) comes before '.' (0x2e). So
// 10-ovn-kubernetes-netshift.conflist is loaded instead of
// 10-ovn-kubernetes.conf, which stays as its plugin wrote it: OVN-Kubernetes'
// readiness probe checks that it exists, and Multus' clusterNetwork names it.
func listName(conf string) string {
	return strings.TrimSuffix(conf, filepath.Ext(conf)) + listSuffix
}

// Install puts the plugin binary into the node's CNI binary directory and
// chains it into the node's CNI configuration: the file the runtime uses
// (see confFiles). A .conflist gets netshift-cni chained in place. A single
// plugin's file (.conf, .json) cannot hold a chain, and its plugin may need
// it as it is: netshift writes a list of it beside it, named by listName so
// that the runtime loads the list instead, and keeps that list following the
// file, whose plugin may write it anew, or remove it, at any time (the list
// goes with it). It changes nothing that
// is already as wanted, so an agent may run it at start and every now and
// then. A configuration it refuses is left as it is, and the binary is
// installed only with a configuration to chain it into.
func Install(confDir, binDir, plugin, networkConfig string, pool *PoolConfig) (changed bool, err error) {
	plan, orphan, err := planInstall(confDir, networkConfig, pool)
	// Each round removes a file, so this ends.
	for ; err == nil && orphan != ""; plan, orphan, err = planInstall(confDir, networkConfig, pool) {
		// netshift's list of a file that is gone: its plugin is gone, or is being reinstalled and
		// took its configuration away so that no pod starts meanwhile. The list would still hand
		// pods to it.
		if err := os.Remove(orphan); err != nil && !errors.Is(err, os.ErrNotExist) {
			return changed, fmt.Errorf("remove %s: %w", orphan, err)
		}
		changed = true
	}
	if err != nil {
		return changed, err
	}
	// The binary goes first: a runtime refuses a configuration whose plugin is missing.
	installed, err := installBinary(plugin, binDir)
	if changed = changed || installed; err != nil {
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
// writes, reading only; or it names netshift's list that the runtime loads
// and whose file is gone (orphan), to be removed before planning again.
func planInstall(confDir, networkConfig string, pool *PoolConfig) (plan confPlan, orphan string, err error) {
	files, err := confFiles(confDir)
	if err != nil {
		return confPlan{}, "", err
	}
	if len(files) == 0 {
		return confPlan{}, "", fmt.Errorf("no CNI configuration in %s yet (the network plugin writes one)", confDir)
	}
	first := files[0]
	data, mode, err := readConf(first)
	if err != nil {
		return confPlan{}, "", err
	}
	if filepath.Ext(first) != ".conflist" {
		plan, err = planList(files, first, data, mode, nil, networkConfig, pool)
		return plan, "", err
	}
	from, err := madeFrom(first, data)
	if err != nil {
		return confPlan{}, "", fmt.Errorf("%s: %w", first, err)
	}
	if from == "" {
		plan, err = planChain(first, data, mode, networkConfig, pool)
		return plan, "", err
	}
	conf := filepath.Join(confDir, from)
	confData, confMode, err := readConf(conf)
	if errors.Is(err, os.ErrNotExist) {
		return confPlan{}, first, nil
	}
	if err != nil {
		return confPlan{}, "", err
	}
	plan, err = planList(files, conf, confData, confMode, data, networkConfig, pool)
	return plan, "", err
}

// planChain chains netshift-cni into a network plugin's list, in place.
func planChain(list string, data []byte, mode os.FileMode, networkConfig string, pool *PoolConfig) (confPlan, error) {
	next, diff, err := Chain(data, networkConfig, pool)
	if err != nil {
		return confPlan{}, fmt.Errorf("%s: %w", list, err)
	}
	if !diff {
		return confPlan{}, nil
	}
	return confPlan{writes: []confWrite{{list, next, mode}}}, nil
}

// planList writes netshift's list of the single plugin's file conf (its
// content data), or brings the list there now (cur, nil if none) in line
// with the file as it is now: compared by content, as a plugin may write
// its file again, with the same content or not, at any time. conf itself is
// never written.
func planList(files []string, conf string, data []byte, mode os.FileMode, cur []byte, networkConfig string, pool *PoolConfig) (confPlan, error) {
	list := filepath.Join(filepath.Dir(conf), listName(filepath.Base(conf)))
	if err := loadedFirst(files, list, conf); err != nil {
		return confPlan{}, err
	}
	next, err := listOf(data, filepath.Base(conf), cur, networkConfig, pool)
	if err != nil {
		return confPlan{}, fmt.Errorf("%s: %w", conf, err)
	}
	if cur != nil && equalJSON(cur, next) {
		return confPlan{}, nil
	}
	return confPlan{writes: []confWrite{{list, next, mode}}}, nil
}

// loadedFirst checks that list, beside conf, is what the runtime loads
// (files are sorted as it sorts them) and hides no file but conf: a file
// sorting before conf is what the runtime loads without netshift, and a
// list netshift wrote before it came would hide it.
func loadedFirst(files []string, list, conf string) error {
	if list >= conf { // never, by listName; but this is the order the runtime goes by
		return fmt.Errorf("%s: netshift's list of it, %s, would not sort before it: rename it", conf, filepath.Base(list))
	}
	for _, f := range files {
		if f != list && f != conf && f < conf {
			return fmt.Errorf("%s: netshift's list of it, %s, would be loaded instead of %s, which the runtime loads without netshift: rename one of them", conf, filepath.Base(list), filepath.Base(f))
		}
	}
	return nil
}

// listOf is netshift's list of a single plugin's configuration conf (the
// file from): Convert's, netshift-cni chained. The plugins another chaining
// plugin added to the list as it is now (cur) stay after the plugin's entry,
// so that netshift and it do not each undo the other's write in turn.
func listOf(conf []byte, from string, cur []byte, networkConfig string, pool *PoolConfig) ([]byte, error) {
	converted, err := Convert(conf, from)
	if err != nil {
		return nil, err
	}
	if added := addedPlugins(cur); len(added) > 0 {
		list, plugins, err := decodeList(converted)
		if err != nil {
			return nil, err
		}
		if list["plugins"], err = json.Marshal(append(plugins, added...)); err != nil {
			return nil, err
		}
		if converted, err = encode(list); err != nil {
			return nil, err
		}
	}
	next, _, err := Chain(converted, networkConfig, pool)
	return next, err
}

// addedPlugins are the entries of netshift's list that are neither the
// network plugin's (the first) nor netshift-cni's; none for a list that
// cannot be read: it is netshift's, made again from the plugin's file.
func addedPlugins(list []byte) []map[string]any {
	if list == nil {
		return nil
	}
	_, plugins, err := decodeList(list)
	if err != nil || len(plugins) == 0 {
		return nil
	}
	if plugins, err = unchain(plugins); err != nil {
		return nil
	}
	return plugins[1:]
}
