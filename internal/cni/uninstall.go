package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Unchained is a configuration list without netshift-cni: List, or, for a
// list Install converted from a single plugin's file, that file's content
// (Conf) and name (From), to be written back in the list's place.
type Unchained struct {
	List []byte
	From string
	Conf []byte
}

// Unchain undoes what Install did to a configuration list: netshift-cni's
// entries go, a wrapped main entry is the network plugin's own again, and a
// converted list gives back the one plugin configuration it was made from
// (its first plugin, which Convert kept whole). A list netshift-cni is not
// in comes back as it is, byte for byte, with changed false.
func Unchain(conflist []byte) (u Unchained, changed bool, err error) {
	list, plugins, err := decodeList(conflist)
	if err != nil {
		return Unchained{}, false, err
	}
	from, err := convertedFrom(conflist)
	if err != nil {
		return Unchained{}, false, err
	}
	if from == "" && !hasPlugin(plugins) {
		return Unchained{List: conflist}, false, nil
	}
	if len(plugins) == 0 {
		return Unchained{}, false, fmt.Errorf("converted from %s, but no plugins: nothing to write back", from)
	}
	if plugins, err = unchain(plugins); err != nil {
		return Unchained{}, false, err
	}
	if from == "" {
		if list["plugins"], err = json.Marshal(plugins); err != nil {
			return Unchained{}, false, err
		}
		u.List, err = encode(list)
		return u, err == nil, err
	}
	if len(plugins) != 1 {
		return Unchained{}, false, fmt.Errorf("converted from %s, but holds %d plugins besides %s: one file cannot hold them", from, len(plugins), PluginName)
	}
	u.From = from
	u.Conf, err = encode(plugins[0])
	return u, err == nil, err
}

func hasPlugin(plugins []map[string]any) bool {
	for _, p := range plugins {
		if p["type"] == PluginName {
			return true
		}
	}
	return false
}

// Uninstall undoes Install on a node: every configuration list in confDir
// loses netshift-cni, a list converted from a single plugin's file is that
// file again (unless the network plugin has written it anew since: then
// the stale list just goes), netshift-cni's binary leaves binDir, and its
// directory in confDir (its node identity) goes. A list netshift-cni is not
// in is left as it is. It refuses a list it cannot read, changing nothing;
// a second call finds nothing to do and reports changed false.
func Uninstall(confDir, binDir string) (changed bool, err error) {
	plan, err := planUninstall(confDir)
	if err != nil {
		return false, err
	}
	if changed, err = plan.apply(); err != nil {
		return changed, err
	}
	// Last: until the configuration no longer names it, the runtime needs the binary.
	for _, path := range []string{filepath.Join(binDir, PluginName), filepath.Join(confDir, PluginName)} {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			return changed, fmt.Errorf("uninstall %s: %w", PluginName, err)
		}
		changed = true
	}
	return changed, nil
}

// planUninstall decides what Uninstall writes in confDir, reading only.
func planUninstall(confDir string) (confPlan, error) {
	files, err := confFiles(confDir)
	if err != nil {
		return confPlan{}, err
	}
	var plan confPlan
	for _, path := range files {
		if filepath.Ext(path) != ".conflist" {
			continue
		}
		data, mode, err := readConf(path)
		if err != nil {
			return confPlan{}, err
		}
		u, changed, err := Unchain(data)
		if err != nil {
			return confPlan{}, fmt.Errorf("%s: %w", path, err)
		}
		switch {
		case !changed:
		case u.From == "":
			plan.writes = append(plan.writes, confWrite{path, u.List, mode})
		case strings.TrimSuffix(u.From, filepath.Ext(u.From)) != strings.TrimSuffix(filepath.Base(path), ".conflist"):
			return confPlan{}, fmt.Errorf("%s: %s %s: netshift converts a file into a list of the same base name only", path, ConvertedFrom, u.From)
		default:
			plan = restore(plan, path, filepath.Join(confDir, u.From), u.Conf, mode)
		}
	}
	return plan, nil
}

// restore plans a converted list's file back, written before the list goes
// so the runtime always finds a configuration. A file the network plugin has
// written since is its newer configuration, and stays.
func restore(plan confPlan, list, conf string, data []byte, mode os.FileMode) confPlan {
	if _, err := os.Lstat(conf); errors.Is(err, os.ErrNotExist) {
		plan.writes = append(plan.writes, confWrite{conf, data, mode})
	}
	plan.removes = append(plan.removes, list)
	return plan
}
