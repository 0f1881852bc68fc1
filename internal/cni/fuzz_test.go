package cni

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// FuzzParseConfig: whatever the runtime sends on stdin, the plugin's parser
// never panics, and a configuration it accepts has a file to read and a
// bounded lock wait.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"1.0.0","name":"pods","type":"netshift-cni"}`))
	f.Add([]byte(`{"cniVersion":"1.0.0","name":"pods","type":"netshift-cni","networkConfig":"/x/network.json","lockTimeout":"5s",
		"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/x"}],"ips":[{"address":"10.0.0.2/24","interface":0}]}}`))
	f.Add([]byte(`{"cniVersion":"0.4.0","name":"pods","type":"netshift-cni","lockTimeout":"-1s"}`))
	f.Add([]byte(`{"cniVersion":"1.0.0","prevResult":{"interfaces":[{"name":"eth0"}],"ips":[{"address":"x","interface":7}]}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, stdin []byte) {
		c, err := ParseConfig(stdin)
		if err != nil {
			return
		}
		if c.NetworkConfig == "" || c.lockTimeout <= 0 || c.lockTimeout > 2*time.Minute {
			t.Fatalf("accepted %s with file %q and lock timeout %s", stdin, c.NetworkConfig, c.lockTimeout)
		}
	})
}

// FuzzConvert: whatever a network plugin wrote as its single plugin's file,
// making netshift's list of it never panics, and a list it makes, with and
// without pools, is one the runtime loads, calling the plugin with the file's
// configuration first; Install finds it as wanted, and Uninstall knows it
// for netshift's and of which file; without netshift-cni it is the file's
// one plugin.
func FuzzConvert(f *testing.F) {
	for _, seed := range []string{ovnConf, multusConf, bridgeConf, mainList, `{"type":"x","n":1e400}`, `{"type":"x","n":12345678901234567890}`,
		`{"type":"netshift-cni"}`, `{"type":"x","pool":{"delegate":{"type":"y"}}}`, `{"type":"x"} {}`, `null`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, conf []byte) {
		for _, pool := range []*PoolConfig{nil, testPool} {
			list, err := listOf(conf, "10-x.conf", nil, "/n.json", pool)
			if err != nil {
				continue
			}
			if got := networkEntry(t, list); !sameJSON(t, got, string(conf)) {
				t.Fatalf("%s listed as\n%s\ncalls the network plugin with %s", conf, list, got)
			}
			if again, err := listOf(conf, "10-x.conf", list, "/n.json", pool); err != nil || !equalJSON(again, list) {
				t.Fatalf("%s listed again over\n%s\nis\n%s (%v)", conf, list, again, err)
			}
			if from, err := madeFrom("10-x-netshift.conflist", list); err != nil || from != "10-x.conf" {
				t.Fatalf("%s listed as\n%s\nis made of %q (%v)", conf, list, from, err)
			}
			plain, changed, err := Unchain(list)
			if _, plugins, _ := decodeList(plain); err != nil || !changed || len(plugins) != 1 || !sameJSON(t, string(mustMarshal(t, plugins[0])), string(conf)) {
				t.Fatalf("%s listed as\n%s\nunchained is %s (%v, changed %v)", conf, list, plain, err, changed)
			}
		}
	})
}

// networkEntry is the network plugin's configuration the runtime calls it
// with through a list: its first entry, or the one netshift-cni wraps there.
func networkEntry(t *testing.T, list []byte) string {
	t.Helper()
	l, err := libcni.ConfListFromBytes(list)
	if err != nil || len(l.Plugins) == 0 {
		t.Fatalf("the runtime cannot load\n%s\n%v", list, err)
	}
	var p map[string]any
	if err := json.Unmarshal(l.Plugins[0].Bytes, &p); err != nil {
		t.Fatal(err)
	}
	if pool, ok := p["pool"].(map[string]any); ok && p["type"] == PluginName {
		p, _ = pool["delegate"].(map[string]any)
	}
	return string(mustMarshal(t, p))
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
