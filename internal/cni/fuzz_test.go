package cni

import (
	"testing"
	"time"
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
// converting it never panics, and a file converted and chained comes back
// from Unchain, with and without pools, as the same JSON under its own name.
func FuzzConvert(f *testing.F) {
	for _, seed := range []string{ovnConf, multusConf, bridgeConf, mainList, `{"type":"x","n":1e400}`, `{"type":"x","n":12345678901234567890}`,
		`{"type":"netshift-cni"}`, `{"type":"x","pool":{"delegate":{"type":"y"}}}`, `{"type":"x"} {}`, `null`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, conf []byte) {
		list, err := Convert(conf, "10-x.conf")
		if err != nil {
			return
		}
		for _, pool := range []*PoolConfig{nil, testPool} {
			chained, _, err := Chain(list, "/n.json", pool)
			if err != nil {
				continue
			}
			u, changed, err := Unchain(chained)
			if err != nil || !changed || u.From != "10-x.conf" || !sameJSON(t, string(u.Conf), string(conf)) {
				t.Fatalf("%s converted and chained into\n%s\ncomes back as %s %s (%v, changed %v)", conf, chained, u.From, u.Conf, err, changed)
			}
		}
	})
}
