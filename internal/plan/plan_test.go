package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExampleFromSampleFiles runs the example through the sample
// files users read in the README.
func TestExampleFromSampleFiles(t *testing.T) {
	nodes, err := LoadNodes("../../config/samples/example-nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pools, err := LoadPools("../../config/samples/example-pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compute(nodes, pools, []string{"c", "d", "e"})
	if err != nil {
		t.Fatal(err)
	}
	wantOwners := map[string]string{"a": "pool1", "b": "pool1", "c": "pool1", "d": "pool2", "e": "pool2"}
	if !reflect.DeepEqual(p.Owners, wantOwners) || !reflect.DeepEqual(p.Waves, [][]string{{"c", "d", "e"}}) {
		t.Fatalf("plan --only c,d,e = %+v", p)
	}
	p, _ = Compute(nodes, pools, nil)
	if !reflect.DeepEqual(p.Waves, [][]string{{"a", "d", "e"}, {"b"}, {"c"}}) {
		t.Fatalf("plan waves = %v, want [[a d e] [b] [c]]", p.Waves)
	}
	var buf bytes.Buffer
	if err := p.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["owners"] == nil || back["waves"] == nil {
		t.Fatalf("JSON form %s: %v", buf.String(), err)
	}
}

func TestFileForms(t *testing.T) {
	forms := map[string]string{
		"array.json":  `[{"kind":"Node","metadata":{"name":"n1"}},{"kind":"Node","metadata":{"name":"n2"}}]`,
		"list.yaml":   "kind: NodeList\napiVersion: v1\nitems:\n- {kind: Node, metadata: {name: n1}}\n- {kind: Node, metadata: {name: n2}}\n",
		"multi.yaml":  "kind: Node\nmetadata: {name: n1}\n---\nkind: Node\nmetadata: {name: n2}\n",
		"array.yaml":  "- {kind: Node, metadata: {name: n1}}\n- {kind: Node, metadata: {name: n2}}\n",
		"v1list.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n- {apiVersion: v1, kind: Node, metadata: {name: n2}}\n",
	}
	for name, body := range forms {
		nodes, err := LoadNodes(write(t, name, body))
		if err != nil || len(nodes) != 2 || nodes[1].Name != "n2" {
			t.Errorf("%s: %d nodes, %v", name, len(nodes), err)
		}
	}
}

func TestBadInputNamesTheProblem(t *testing.T) {
	cases := map[string]struct{ nodes, pools, want string }{
		"pod in node file":   {`[{"kind":"Pod","metadata":{"name":"x"}}]`, `[]`, `kind "Pod", want Node`},
		"bad maxParallel":    {`[]`, `[{"kind":"NetshiftNodePool","metadata":{"name":"p"},"spec":{"maxParallel":"150%"}}]`, `spec.maxParallel`},
		"reserved pool":      {`[]`, `[{"kind":"NetshiftNodePool","metadata":{"name":"default"}}]`, `reserved`},
		"bad operator":       {`[]`, `[{"kind":"NetshiftNodePool","metadata":{"name":"p"},"spec":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Near","values":["a"]}]}]}}]`, `operator`},
		"unknown pool field": {`[]`, `[{"kind":"NetshiftNodePool","metadata":{"name":"p"},"spec":{"maxParalel":2}}]`, `maxParalel`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			nodes, err := LoadNodes(write(t, "n.json", c.nodes))
			if err == nil {
				var pools, perr = LoadPools(write(t, "p.json", c.pools))
				err = perr
				if err == nil {
					_, err = Compute(nodes, pools, nil)
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
	nodes, _ := LoadNodes(write(t, "n.json", `[{"kind":"Node","metadata":{"name":"n1"}}]`))
	if _, err := Compute(nodes, nil, []string{"n1", "zz"}); err == nil || !strings.Contains(err.Error(), "zz") {
		t.Fatalf("--only with an unknown node: %v", err)
	}
}
