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

// DefaultLockTimeout bounds the wait for a live change to release the
// configuration: an MTU change's agent holds it across the node's steps
// (hundreds of milliseconds; at most 5 s of them, then step by step), and the
// kubelet's runtime request timeout (2 minutes) is far above this.
const DefaultLockTimeout = 20 * time.Second

// Config is the plugin's entry in the node's CNI configuration list.
type Config struct {
	types.NetConf
	// NetworkConfig is the node's applied network configuration file.
	NetworkConfig string `json:"networkConfig,omitempty"`
	// LockTimeout is how long ADD waits for the configuration's lock ("20s").
	LockTimeout string `json:"lockTimeout,omitempty"`
	// Pool, when set, makes this entry the node's main plugin: it wires the
	// pods of namespaces that use Neutron port pools to their pooled ports
	// and hands every other pod to the network plugin it wraps.
	Pool *PoolConfig `json:"pool,omitempty"`

	lockTimeout time.Duration
	prevResult  *current.Result
}

// PoolConfig is the pooled-port side of netshift-cni.
type PoolConfig struct {
	// Node is this node's name.
	Node string `json:"node"`
	// Kubeconfig is the plugin's identity on the API server: the node's own,
	// which the API server lets read only the pods bound to this node.
	Kubeconfig string `json:"kubeconfig"`
	// Namespaces is the file in which the agent lists the namespaces that
	// use port pools (see PoolNamespaces).
	Namespaces string `json:"namespaces"`
	// StateDir keeps what each pooled sandbox was wired with, for its DEL.
	StateDir string `json:"stateDir"`
	// OVSDB is the node's Open vSwitch database (unix:PATH); Bridge its
	// integration bridge.
	OVSDB  string `json:"ovsdb"`
	Bridge string `json:"bridge"`
	// TrunkBridge is the bridge whose uplink is the node's trunk NIC, on a
	// node that is a VM: a pod's trunk subport is plugged there, as an
	// access port of its VLAN (empty: the node has no trunk, and a pod
	// handed a subport fails its ADD with why).
	TrunkBridge string `json:"trunkBridge,omitempty"`
	// PlugMode is the node's plug mode, per-port or direct, unless the node's
	// netshift.io/plug-mode annotation says otherwise.
	PlugMode string `json:"plugMode"`
	// PortWait bounds the wait for the operator's record of the pod's port
	// ("30s": at most 30 s, well under the kubelet's runtime request timeout).
	PortWait string `json:"portWait,omitempty"`
	// MTU is the MTU of a pod's interface where neither its port's record
	// (the Neutron network's MTU) nor the node's applied network
	// configuration says one (0: the kernel's default, 1500).
	MTU int `json:"mtu,omitempty"`
	// ParkedDevices is how many returned ports' devices the node keeps
	// plugged, parked, for the next pod of their pool (0: none; at most
	// MaxParkedDevices). The agent removes those parked too long.
	ParkedDevices int `json:"parkedDevices,omitempty"`
	// Delegate is the network plugin's own entry (with its "type"), which
	// wires every pod of the other namespaces.
	Delegate map[string]any `json:"delegate"`

	portWait time.Duration
}

// MaxParkedDevices bounds PoolConfig.ParkedDevices: each parked device keeps
// a veth pair and its port's plug (a port bridge in per-port mode) on the node.
const MaxParkedDevices = 256

// MaxPortWait bounds PoolConfig.PortWait: a pod whose port has not come
// within it fails its ADD, and the kubelet retries the sandbox.
const MaxPortWait = 30 * time.Second

// validate checks the pool side's settings and fills its defaults.
func (p *PoolConfig) validate() error {
	missing := []string{}
	for _, f := range []struct{ name, v string }{{"node", p.Node}, {"kubeconfig", p.Kubeconfig}, {"namespaces", p.Namespaces},
		{"stateDir", p.StateDir}, {"ovsdb", p.OVSDB}, {"bridge", p.Bridge}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("netshift-cni: pool: %v required", missing)
	}
	if p.PlugMode != "per-port" && p.PlugMode != "direct" {
		return fmt.Errorf("netshift-cni: pool.plugMode %q: want per-port or direct", p.PlugMode)
	}
	if p.MTU != 0 && (p.MTU < 576 || p.MTU > 9216) {
		return fmt.Errorf("netshift-cni: pool.mtu %d: want 0 (unset) or 576..9216", p.MTU)
	}
	if p.ParkedDevices < 0 || p.ParkedDevices > MaxParkedDevices {
		return fmt.Errorf("netshift-cni: pool.parkedDevices %d: want 0 (none kept) to %d", p.ParkedDevices, MaxParkedDevices)
	}
	if t, _ := p.Delegate["type"].(string); t == "" || t == PluginName {
		return fmt.Errorf("netshift-cni: pool.delegate: want the network plugin's entry, with its type (not %s)", PluginName)
	}
	p.portWait = MaxPortWait
	if p.PortWait != "" {
		d, err := time.ParseDuration(p.PortWait)
		if err != nil || d <= 0 || d > MaxPortWait {
			return fmt.Errorf("netshift-cni: pool.portWait %q: want a duration above 0 and at most %s", p.PortWait, MaxPortWait)
		}
		p.portWait = d
	}
	return nil
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
	if c.Pool != nil {
		if err := c.Pool.validate(); err != nil {
			return nil, err
		}
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
