package cni

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// DefaultNetworkConfig is where the agent's DaemonSet keeps the node's
// applied network configuration.
const DefaultNetworkConfig = "/var/lib/netshift/network.json"

// DefaultLockTimeout bounds the wait for a live change's step to release the
// configuration: a step holds it for milliseconds, and the kubelet's runtime
// request timeout (2 minutes) is far above this.
const DefaultLockTimeout = 20 * time.Second

// Config is the plugin's entry in the node's CNI configuration list.
type Config struct {
	types.NetConf
	// NetworkConfig is the node's applied network configuration file.
	NetworkConfig string `json:"networkConfig,omitempty"`
	// LockTimeout is how long ADD waits for the configuration's lock ("20s").
	LockTimeout string `json:"lockTimeout,omitempty"`

	lockTimeout time.Duration
	prevResult  *current.Result
}

// ParseConfig reads the plugin's configuration from stdin's bytes, with the
// previous plugin's result converted to the current result type.
func ParseConfig(stdin []byte) (*Config, error) {
	c := &Config{}
	if err := json.Unmarshal(stdin, c); err != nil {
		return nil, fmt.Errorf("netshift-cni: parse configuration: %w", err)
	}
	if c.NetworkConfig == "" {
		c.NetworkConfig = DefaultNetworkConfig
	}
	c.lockTimeout = DefaultLockTimeout
	if c.LockTimeout != "" {
		d, err := time.ParseDuration(c.LockTimeout)
		if err != nil || d <= 0 || d > 2*time.Minute {
			return nil, fmt.Errorf("netshift-cni: lockTimeout %q: want a duration above 0 and at most 2m", c.LockTimeout)
		}
		c.lockTimeout = d
	}
	if err := version.ParsePrevResult(&c.NetConf); err != nil {
		return nil, fmt.Errorf("netshift-cni: previous result: %w", err)
	}
	if c.PrevResult != nil {
		r, err := current.NewResultFromResult(c.PrevResult)
		if err != nil {
			return nil, fmt.Errorf("netshift-cni: previous result: %w", err)
		}
		c.prevResult = r
	}
	return c, nil
}
