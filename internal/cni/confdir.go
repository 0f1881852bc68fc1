package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/containernetworking/cni/libcni"

	"netshift.io/netshift/internal/atomicfile"
)

// confFiles are the node's CNI configuration files in the order a runtime
// tries them; the first is the one it uses. containerd (go-cni's
// loadFromConfDir) and CRI-O (ocicni) both take libcni.ConfFiles(dir,
// .conf, .conflist, .json) sorted by name, load a .conflist as a list, and
// load a .conf or .json as one plugin's configuration (a .json holding a
// list has no type: containerd refuses it, CRI-O skips it). netshift follows
// the .conflist/.conf split, and takes the first file even when it is bad:
// it refuses it, as containerd does, rather than guess which file CRI-O
// would fall back to.
func confFiles(confDir string) ([]string, error) {
	// ConfFiles says nothing of a missing directory; a mount gone wrong must not read as "not yet".
	if _, err := os.Stat(confDir); err != nil {
		return nil, fmt.Errorf("CNI configuration directory %s: %w", confDir, err)
	}
	files, err := libcni.ConfFiles(confDir, []string{".conf", ".conflist", ".json"})
	if err != nil {
		return nil, fmt.Errorf("CNI configuration directory %s: %w", confDir, err)
	}
	sort.Strings(files)
	return files, nil
}

// readConf reads a configuration file and its permissions, which what
// netshift writes in its stead keeps.
func readConf(path string) ([]byte, os.FileMode, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	return data, st.Mode().Perm(), nil
}

// confPlan is what Install or Uninstall changes in the configuration
// directory, decided before anything is written so that a refusal changes
// nothing: the writes, in order, then the removals, so the runtime always
// finds a configuration.
type confPlan struct {
	writes  []confWrite
	removes []string
}

type confWrite struct {
	path string
	data []byte
	mode os.FileMode
}

func (p confPlan) apply() (changed bool, err error) {
	for _, w := range p.writes {
		if err := atomicfile.Write(w.path, w.data, w.mode); err != nil {
			return changed, fmt.Errorf("write %s: %w", w.path, err)
		}
		changed = true
	}
	for _, path := range p.removes {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return changed, fmt.Errorf("remove %s: %w", path, err)
		}
		changed = true
	}
	return changed, nil
}

// decode is json.Unmarshal keeping numbers as written: a network plugin's
// settings go back to it, or to its file, exactly.
func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more after the JSON value")
	}
	return nil
}

// decodeList splits a configuration list into its top-level keys, kept as
// they are, and its plugins.
func decodeList(conflist []byte) (map[string]json.RawMessage, []map[string]any, error) {
	var list map[string]json.RawMessage
	if err := decode(conflist, &list); err != nil {
		return nil, nil, fmt.Errorf("not a CNI configuration list: %w", err)
	}
	var plugins []map[string]any
	if raw, ok := list["plugins"]; ok {
		if err := decode(raw, &plugins); err != nil {
			return nil, nil, fmt.Errorf("not a CNI configuration list: plugins: %w", err)
		}
	}
	return list, plugins, nil
}

// encode writes a configuration file as netshift writes them all: indented,
// ending with a newline.
func encode(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return nil, err
	}
	return append(buf.Bytes(), '\n'), nil
}

func mustJSON(s string) json.RawMessage {
	raw, _ := json.Marshal(s) // a string always encodes
	return raw
}

// madeFrom is the single plugin's file netshift made the list at path of
// (see listName), or "" for a list netshift did not make. A list that does
// not hold ConvertedFrom's bytes is not parsed: it may be anything.
func madeFrom(path string, data []byte) (string, error) {
	if !bytes.Contains(data, []byte(ConvertedFrom)) {
		return "", nil
	}
	from, err := convertedFrom(data)
	if err != nil || from == "" {
		return "", err
	}
	if want := listName(from); filepath.Base(path) != want {
		return "", fmt.Errorf("%s %s: netshift names its list of that file %s", ConvertedFrom, from, want)
	}
	return from, nil
}

// equalJSON: the same JSON value, however written (numbers compared as
// written).
func equalJSON(a, b []byte) bool {
	var va, vb any
	if decode(a, &va) != nil || decode(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// convertedFrom is the file a list was converted from (ConvertedFrom), or
// "" for a list that was not.
func convertedFrom(conflist []byte) (string, error) {
	var list map[string]json.RawMessage
	if err := decode(conflist, &list); err != nil {
		return "", fmt.Errorf("not a CNI configuration list: %w", err)
	}
	raw, ok := list[ConvertedFrom]
	if !ok {
		return "", nil
	}
	var from string
	if err := json.Unmarshal(raw, &from); err != nil || !isConfName(from) {
		return "", fmt.Errorf("%s %s: want the name of a .conf or .json file of this directory", ConvertedFrom, raw)
	}
	return from, nil
}

// isConfName: a bare name of a single plugin's configuration file, so that
// writing it back stays in the configuration directory.
func isConfName(name string) bool {
	ext := filepath.Ext(name)
	return name == filepath.Base(name) && name != ext && (ext == ".conf" || ext == ".json")
}
