// Package plan answers "what would netshift do": which pool owns each node
// and in which waves the nodes that need configuration would go. It reads
// Nodes and NetshiftNodePools from files or from a cluster and calls the same core
// the drain controller calls.
package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"netshift.io/netshift/api/v1alpha1"
)

// LoadNodes reads Node objects from a YAML or JSON file: a bare array, a
// List or NodeList, or several YAML documents.
func LoadNodes(path string) ([]corev1.Node, error) {
	var out []corev1.Node
	err := eachObject(path, func(i int, kind string, raw []byte) error {
		if kind != "Node" {
			return fmt.Errorf("object %d: kind %q, want Node", i, kind)
		}
		var n corev1.Node
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("object %d: %w", i, err)
		}
		if n.Name == "" {
			return fmt.Errorf("object %d: Node without metadata.name", i)
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

// LoadPools reads NetshiftNodePool objects the same way.
func LoadPools(path string) ([]v1alpha1.NetshiftNodePool, error) {
	var out []v1alpha1.NetshiftNodePool
	err := eachObject(path, func(i int, kind string, raw []byte) error {
		if kind != "NetshiftNodePool" {
			return fmt.Errorf("object %d: kind %q, want NetshiftNodePool", i, kind)
		}
		var p v1alpha1.NetshiftNodePool
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return fmt.Errorf("object %d (NetshiftNodePool %q): %w", i, p.Name, err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

func eachObject(path string, fn func(i int, kind string, raw []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	i := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			continue
		}
		var items []json.RawMessage
		if js[0] == '[' {
			if err := json.Unmarshal(js, &items); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		} else {
			var head struct {
				Kind  string            `json:"kind"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(js, &head); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if head.Items != nil || (len(head.Kind) > 4 && head.Kind[len(head.Kind)-4:] == "List") {
				items = head.Items
			} else {
				items = []json.RawMessage{js}
			}
		}
		for _, raw := range items {
			var head struct {
				Kind string `json:"kind"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				return fmt.Errorf("%s: object %d: %w", path, i, err)
			}
			if err := fn(i, head.Kind, raw); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			i++
		}
	}
}
