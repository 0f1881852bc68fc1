package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Unchain takes netshift-cni out of a configuration list Install chained it
// into in place: netshift-cni's entries go, and a wrapped main entry is the
// network plugin's own again. A list netshift-cni is not in comes back as it
// is, byte for byte, with changed false.
func Unchain(conflist []byte) (list []byte, changed bool, err error) {
	top, plugins, err := decodeList(conflist)
	if err != nil {
		return nil, false, err
	}
	if !hasPlugin(plugins) {
		return conflist, false, nil
	}
	if plugins, err = unchain(plugins); err != nil {
		return nil, false, err
	}
	if top["plugins"], err = json.Marshal(plugins); err != nil {
		return nil, false, err
	}
	list, err = encode(top)
	return list, err == nil, err
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
// loses netshift-cni, the lists netshift made of single plugins' files go
// (those files, which Install never writes, are the runtime's again),
// netshift-cni's binary leaves binDir, and its directory in confDir (its
// node identity) goes. A list that does not name netshift is left as it is,
// unread as JSON. It refuses a list naming netshift that it cannot read,
// changing nothing; a second call finds nothing to do and reports changed
// false.
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

// planUninstall decides what Uninstall changes in confDir, reading only.
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
		if errors.Is(err, os.ErrNotExist) {
			continue // gone since it was listed, or a dangling link: the runtime cannot read it either
		}
		if err != nil {
			return confPlan{}, err
		}
		// Another plugin's list is none of netshift's business, even one the runtime could not load.
		if !bytes.Contains(data, []byte(PluginName)) && !bytes.Contains(data, []byte(ConvertedFrom)) {
			continue
		}
		if plan, err = planUnchain(plan, path, data, mode); err != nil {
			return confPlan{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	return plan, nil
}

// planUnchain adds what takes netshift out of the list at path to plan:
// netshift's own list goes, whether the file it was made of is there or not
// (the plugin's to keep or remove); another list is written without
// netshift-cni.
func planUnchain(plan confPlan, path string, data []byte, mode os.FileMode) (confPlan, error) {
	from, err := madeFrom(path, data)
	if err != nil {
		return plan, err
	}
	if from != "" {
		plan.removes = append(plan.removes, path)
		return plan, nil
	}
	list, changed, err := Unchain(data)
	if err == nil && changed {
		plan.writes = append(plan.writes, confWrite{path, list, mode})
	}
	return plan, err
}
