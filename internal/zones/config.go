package zones

import (
	"fmt"
	"sort"
	"strings"
)

// Mode is a cluster's interconnect layout.
type Mode string

const (
	// Legacy is the central layout of a cluster without zone support: no node
	// carries a zone annotation.
	Legacy Mode = "legacy"
	// Single is one zone, "global", for every node, with the central databases.
	Single Mode = "singlezone"
	// Multi is one zone per node, named after the node, joined by interconnect.
	Multi Mode = "multizone"
	// Undefined is any other mix of annotations: a rollout in progress, or a
	// cluster someone changed by hand.
	Undefined Mode = "undefined"
)

// The names netshift shares with OVN-Kubernetes.
const (
	// GlobalZone is the zone of every node in single-zone mode.
	GlobalZone = "global"
	// ZoneAnnotation on a Node is the zone its ovn-controller is bound in.
	ZoneAnnotation = "k8s.ovn.org/zone-name"
	// ConfigMapName is the ConfigMap that states the desired layout.
	ConfigMapName = "ovn-interconnect-configuration"
	// KeyZoneMode and KeyDefinitive are its keys.
	KeyZoneMode   = "zone-mode"
	KeyDefinitive = "definitive"
)

// Config is what the ConfigMap says.
type Config struct {
	// Present is false when there is no ConfigMap: a fresh install's default, multizone.
	Present bool
	Mode    Mode
	// Definitive is a lasting wish (a person wrote it); false marks netshift's
	// own intermediate step of an upgrade, after which the cluster goes on to
	// multizone.
	Definitive bool
}

// ParseConfig reads the ConfigMap's data; present is whether it exists. An
// error names the key and the allowed values.
func ParseConfig(present bool, data map[string]string) (Config, error) {
	if !present {
		return Config{Present: false, Mode: Multi, Definitive: true}, nil
	}
	c := Config{Present: true, Definitive: true}
	switch m := Mode(strings.TrimSpace(data[KeyZoneMode])); m {
	case Single, Multi:
		c.Mode = m
	case "":
		return Config{}, fmt.Errorf("ConfigMap %s: %s: missing (allowed: %s, %s)", ConfigMapName, KeyZoneMode, Single, Multi)
	default:
		return Config{}, fmt.Errorf("ConfigMap %s: %s: %q is not %s or %s", ConfigMapName, KeyZoneMode, data[KeyZoneMode], Single, Multi)
	}
	switch d := strings.TrimSpace(data[KeyDefinitive]); d {
	case "", "yes":
	case "no":
		c.Definitive = false
	default:
		return Config{}, fmt.Errorf("ConfigMap %s: %s: %q is not yes or no", ConfigMapName, KeyDefinitive, d)
	}
	if !c.Definitive && c.Mode != Single {
		return Config{}, fmt.Errorf("ConfigMap %s: %s: no is netshift's mark of the single-zone step of an upgrade; with %s: %s it means nothing (allowed: %s with no, or definitive: yes)",
			ConfigMapName, KeyDefinitive, KeyZoneMode, c.Mode, Single)
	}
	var unknown []string
	for k := range data {
		if k != KeyZoneMode && k != KeyDefinitive {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("ConfigMap %s: unknown key(s) %s (allowed: %s, %s)", ConfigMapName, strings.Join(unknown, ", "), KeyZoneMode, KeyDefinitive)
	}
	return c, nil
}

// Desired is the layout the cluster should end in: multizone without a
// ConfigMap or through netshift's intermediate step, else what it says.
func (c Config) Desired() Mode {
	if !c.Present || !c.Definitive {
		return Multi
	}
	return c.Mode
}

// IntermediateData is the ConfigMap netshift writes to record the single-zone
// step of an upgrade from the legacy layout.
func IntermediateData() map[string]string {
	return map[string]string{KeyZoneMode: string(Single), KeyDefinitive: "no"}
}
