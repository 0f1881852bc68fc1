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
