package cni

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// An unrelated list, as its plugin wrote it: it must stay byte for byte.
const otherList = "{ \"cniVersion\": \"1.0.0\", \"name\": \"other\",\n\t\"plugins\": [ {\"type\": \"bridge\", \"mtu\": 1.50e3} ] }"

// TestUninstallRestoresTheDirectory: Install then Uninstall leaves the
// configuration directory as the network plugins wrote it (the same files,
// the same JSON; the files Install did not touch byte for byte), and no
// netshift-cni binary, nor its identity directory, behind.
func TestUninstallRestoresTheDirectory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		touched string // the file Install changes
	}{
		{"OVN-Kubernetes' .conf", map[string]string{"10-ovn-kubernetes.conf": ovnConf}, "10-ovn-kubernetes.conf"},
		{"Multus' and OVN-Kubernetes' .conf", map[string]string{"00-multus.conf": multusConf, "10-ovn-kubernetes.conf": ovnConf,
			"multus.d/": "", "multus.d/multus.kubeconfig": "k"}, "00-multus.conf"},
		{"a .json", map[string]string{"10-pods.json": bridgeConf}, "10-pods.json"},
		{"a .conflist", map[string]string{"10-pods.conflist": mainList, "20-other.conflist": otherList}, "10-pods.conflist"},
		{"a .conf beside other lists and files", map[string]string{"10-ovn-kubernetes.conf": ovnConf, "20-other.conflist": otherList,
			"10-ovn-kubernetes.conf.bak": "old", "README": "r"}, "10-ovn-kubernetes.conf"},
	} {
		for _, pool := range []*PoolConfig{nil, testPool} {
			t.Run(tc.name+map[bool]string{false: "", true: ", with pools"}[pool != nil], func(t *testing.T) {
				n := newTestNode(t, tc.files)
				before := files(t, n.conf)
				if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", pool); err != nil {
					t.Fatal(err)
				}
				n.write(t, "netshift-cni/kubeconfig", "identity") // as the agent writes it, with pools
				if changed, err := Uninstall(n.conf, n.bin); err != nil || !changed {
					t.Fatalf("Uninstall: %v, changed %v", err, changed)
				}
				after := files(t, n.conf)
				if names(after) != names(before) {
					t.Fatalf("the directory holds %s, want %s", names(after), names(before))
				}
				for name, was := range before {
					if name == tc.touched && !sameJSON(t, after[name], was) || name != tc.touched && after[name] != was {
						t.Fatalf("%s is\n%s\nwant\n%s", name, after[name], was)
					}
				}
				if got := names(files(t, n.bin)); got != "ovn-k8s-cni-overlay" {
					t.Fatalf("the binary directory holds %s", got)
				}
				if changed, err := Uninstall(n.conf, n.bin); err != nil || changed {
					t.Fatalf("a second Uninstall: %v, changed %v", err, changed)
				}
			})
		}
	}
}

// TestUninstallAfterThePluginRewroteItsConf: the network plugin's newer
// .conf is what it wants now; only the stale list goes.
func TestUninstallAfterThePluginRewroteItsConf(t *testing.T) {
	n := newTestNode(t, map[string]string{"10-ovn-kubernetes.conf": ovnConf})
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", testPool); err != nil {
		t.Fatal(err)
	}
	rewritten := strings.Replace(ovnConf, `"logLevel":"4"`, `"logLevel":"5"`, 1)
	n.write(t, "10-ovn-kubernetes.conf", rewritten)
	if changed, err := Uninstall(n.conf, n.bin); err != nil || !changed {
		t.Fatalf("Uninstall: %v, changed %v", err, changed)
	}
	if got := files(t, n.conf); !reflect.DeepEqual(got, map[string]string{"10-ovn-kubernetes.conf": rewritten}) {
		t.Fatalf("the directory holds %v", got)
	}
}

// TestUninstallRefusesWhatItCannotUndo: a list netshift-cni cannot be taken
// out of, or a converted list that does not say which of the directory's
// files it was, is named; nothing changes, netshift-cni's binary included.
func TestUninstallRefusesWhatItCannotUndo(t *testing.T) {
	converted := func(from string) string {
		return `{"cniVersion":"0.4.0","name":"ovn-kubernetes","netshift.io/converted-from":` + from +
			`,"plugins":[{"type":"ovn-k8s-cni-overlay","name":"ovn-kubernetes"},{"type":"netshift-cni"}]}`
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a list that is not JSON", map[string]string{"10-pods.conflist": `{"name":`}, "10-pods.conflist: not a CNI configuration list"},
		{"a list of netshift-cni only", map[string]string{"10-pods.conflist": `{"name":"pods","plugins":[{"type":"netshift-cni"}]}`},
			"10-pods.conflist: not a CNI configuration list: only netshift-cni in it"},
		{"a wrapping entry with no delegate", map[string]string{"10-pods.conflist": `{"name":"pods","plugins":[{"type":"netshift-cni","pool":{}},{"type":"netshift-cni"}]}`},
			"10-pods.conflist: the first plugin is netshift-cni with a pool but no delegate"},
		{"a converted list naming a file elsewhere", map[string]string{"10-ovn-kubernetes.conflist": converted(`"../10-ovn-kubernetes.conf"`)},
			`10-ovn-kubernetes.conflist: netshift.io/converted-from "../10-ovn-kubernetes.conf": want the name of a .conf or .json file of this directory`},
		{"a converted list naming no file", map[string]string{"10-ovn-kubernetes.conflist": converted(`7`)},
			`10-ovn-kubernetes.conflist: netshift.io/converted-from 7: want the name`},
		{"a converted list naming another base name", map[string]string{"10-ovn-kubernetes.conflist": converted(`"00-multus.conf"`)},
			"10-ovn-kubernetes.conflist: netshift.io/converted-from 00-multus.conf: netshift converts a file into a list of the same base name only"},
		{"a converted list with a plugin added", map[string]string{"10-ovn-kubernetes.conflist": strings.Replace(converted(`"10-ovn-kubernetes.conf"`), `{"type":"netshift-cni"}`, `{"type":"portmap"}`, 1)},
			"10-ovn-kubernetes.conflist: converted from 10-ovn-kubernetes.conf, but holds 2 plugins besides netshift-cni"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, tc.files)
			n.write(t, "netshift-cni/kubeconfig", "identity")
			if err := os.WriteFile(filepath.Join(n.bin, PluginName), []byte("binary"), 0o755); err != nil {
				t.Fatal(err)
			}
			before, binBefore := files(t, n.conf), files(t, n.bin)
			_, err := Uninstall(n.conf, n.bin)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Uninstall: %v, want %q", err, tc.want)
			}
			if !reflect.DeepEqual(files(t, n.conf), before) || !reflect.DeepEqual(files(t, n.bin), binBefore) {
				t.Fatal("a refused Uninstall changed something")
			}
		})
	}
}

func TestUnchainLeavesAListWithoutNetshiftAsItIs(t *testing.T) {
	for _, list := range []string{otherList, `{"name":"x"}`, `{"name":"x","plugins":[]}`} {
		u, changed, err := Unchain([]byte(list))
		if err != nil || changed || string(u.List) != list || u.From != "" {
			t.Errorf("Unchain(%s): %+v, %v, %v", list, u, changed, err)
		}
	}
}
