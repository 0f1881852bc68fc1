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
// configuration directory as the network plugins wrote it (the same files;
// byte for byte but a list netshift-cni was chained into in place, which is
// the same JSON), and no netshift-cni binary, nor its identity directory,
// behind.
func TestUninstallRestoresTheDirectory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		chained string // the list Install chains netshift-cni into in place
	}{
		{"OVN-Kubernetes' .conf", map[string]string{"10-ovn-kubernetes.conf": ovnConf}, ""},
		{"Multus' and OVN-Kubernetes' .conf", map[string]string{"00-multus.conf": multusConf, "10-ovn-kubernetes.conf": ovnConf,
			"multus.d/": "", "multus.d/multus.kubeconfig": "k"}, ""},
		{"a .json", map[string]string{"10-pods.json": bridgeConf}, ""},
		{"a .conflist", map[string]string{"10-pods.conflist": mainList, "20-other.conflist": otherList}, "10-pods.conflist"},
		{"a .conf beside other lists and files", map[string]string{"10-ovn-kubernetes.conf": ovnConf, "20-other.conflist": otherList,
			"10-ovn-kubernetes.conf.bak": "old", "README": "r", "30-broken.conflist": `{"name":`, "40-empty.conflist": ""}, ""},
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
					if name == tc.chained && !sameJSON(t, after[name], was) || name != tc.chained && after[name] != was {
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

// TestUninstallAfterThePluginChangedItsConf: the network plugin's .conf is
// its own, as it is now, or gone; netshift's list goes either way, even
// with another chaining plugin's entry in it (that plugin chains itself
// into the .conf again, as it did before netshift).
func TestUninstallAfterThePluginChangedItsConf(t *testing.T) {
	rewritten := strings.Replace(ovnConf, `"logLevel":"4"`, `"logLevel":"5"`, 1)
	for _, tc := range []struct {
		name  string
		after func(n testNode)
		want  map[string]string
	}{
		{"rewritten", func(n testNode) { n.write(t, "10-ovn-kubernetes.conf", rewritten) }, map[string]string{"10-ovn-kubernetes.conf": rewritten}},
		{"removed", func(n testNode) { _ = os.Remove(filepath.Join(n.conf, "10-ovn-kubernetes.conf")) }, map[string]string{}},
		{"another plugin chained into netshift's list", func(n testNode) { n.chainAnother(t, "10-ovn-kubernetes-netshift.conflist") },
			map[string]string{"10-ovn-kubernetes.conf": ovnConf}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, map[string]string{"10-ovn-kubernetes.conf": ovnConf})
			if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", testPool); err != nil {
				t.Fatal(err)
			}
			tc.after(n)
			if changed, err := Uninstall(n.conf, n.bin); err != nil || !changed {
				t.Fatalf("Uninstall: %v, changed %v", err, changed)
			}
			if got := files(t, n.conf); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("the directory holds %v", got)
			}
		})
	}
}

// TestUninstallRemovesEveryListOfNetshifts: Multus installed after netshift
// writes its .conf before OVN-Kubernetes'; netshift lists it in turn, and
// its list of OVN-Kubernetes' stays unused until Uninstall removes both.
func TestUninstallRemovesEveryListOfNetshifts(t *testing.T) {
	n := newTestNode(t, map[string]string{"10-ovn-kubernetes.conf": ovnConf})
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	n.write(t, "00-multus.conf", multusConf)
	before := files(t, n.conf)
	delete(before, "10-ovn-kubernetes-netshift.conflist")
	if _, err := Install(n.conf, n.bin, n.plugin, "/n.json", nil); err != nil {
		t.Fatal(err)
	}
	if l := runtimeLoads(t, n.conf); l.File != "00-multus-netshift.conflist" || strings.Join(l.Types, ",") != "multus-shim,netshift-cni" {
		t.Fatalf("the runtime loads %s %v", l.File, l.Types)
	}
	if _, err := Uninstall(n.conf, n.bin); err != nil {
		t.Fatal(err)
	}
	if got := files(t, n.conf); !reflect.DeepEqual(got, before) {
		t.Fatalf("the directory holds %s, want %s", names(got), names(before))
	}
}

// TestUninstallRefusesWhatItCannotUndo: a list naming netshift that it
// cannot be taken out of, or a list of netshift's that does not say which of
// the directory's files it was made of, is named; nothing changes,
// netshift-cni's binary included.
func TestUninstallRefusesWhatItCannotUndo(t *testing.T) {
	made := func(from string) string {
		return `{"cniVersion":"0.4.0","name":"ovn-kubernetes","netshift.io/converted-from":` + from +
			`,"plugins":[{"type":"ovn-k8s-cni-overlay","name":"ovn-kubernetes"},{"type":"netshift-cni"}]}`
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a list naming netshift-cni that is not JSON", map[string]string{"10-pods.conflist": `{"name":"pods","plugins":[{"type":"netshift-cni"`},
			"10-pods.conflist: not a CNI configuration list"},
		{"a list of netshift's that is not JSON", map[string]string{"10-pods-netshift.conflist": `{"netshift.io/converted-from":"10-pods.conf",`},
			"10-pods-netshift.conflist: not a CNI configuration list"},
		{"a list of netshift-cni only", map[string]string{"10-pods.conflist": `{"name":"pods","plugins":[{"type":"netshift-cni"}]}`},
			"10-pods.conflist: not a CNI configuration list: only netshift-cni in it"},
		{"a wrapping entry with no delegate", map[string]string{"10-pods.conflist": `{"name":"pods","plugins":[{"type":"netshift-cni","pool":{}},{"type":"netshift-cni"}]}`},
			"10-pods.conflist: the first plugin is netshift-cni with a pool but no delegate"},
		{"a list of netshift's naming a file elsewhere", map[string]string{"10-ovn-kubernetes-netshift.conflist": made(`"../10-ovn-kubernetes.conf"`)},
			`10-ovn-kubernetes-netshift.conflist: netshift.io/converted-from "../10-ovn-kubernetes.conf": want the name of a .conf or .json file of this directory`},
		{"a list of netshift's naming no file", map[string]string{"10-ovn-kubernetes-netshift.conflist": made(`7`)},
			`10-ovn-kubernetes-netshift.conflist: netshift.io/converted-from 7: want the name`},
		{"a list of netshift's named after another file", map[string]string{"10-ovn-kubernetes-netshift.conflist": made(`"00-multus.conf"`)},
			"10-ovn-kubernetes-netshift.conflist: netshift.io/converted-from 00-multus.conf: netshift names its list of that file 00-multus-netshift.conflist"},
		{"a list in the place of its file", map[string]string{"10-ovn-kubernetes.conflist": made(`"10-ovn-kubernetes.conf"`)},
			"10-ovn-kubernetes.conflist: netshift.io/converted-from 10-ovn-kubernetes.conf: netshift names its list of that file 10-ovn-kubernetes-netshift.conflist"},
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
		got, changed, err := Unchain([]byte(list))
		if err != nil || changed || string(got) != list {
			t.Errorf("Unchain(%s): %s, %v, %v", list, got, changed, err)
		}
	}
}
