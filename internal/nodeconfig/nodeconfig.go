// Package nodeconfig reads and writes a node's network configuration: the
// file new pods on the node are set up from (their MTU, and the tunnel
// encapsulation and port). A live change rewrites it as its last step, so the
// pods created once the node is uncordoned get the new values.
package nodeconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/atomicfile"
)

// File is the file's content.
type File struct {
	v1alpha1.NodeNetworkConfig
	// Change is the live change that wrote the file ("" when the installer did).
	Change string `json:"change,omitempty"`
}

// Write replaces the file at path whole: readers see the old content or the
// new, never a mix, even if the node loses power halfway.
func Write(path string, f File) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("network configuration %s: %w", path, err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("network configuration %s: %w", path, err)
	}
	return nil
}

// Read reads the file at path.
func Read(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("network configuration: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return f, fmt.Errorf("network configuration %s: %w", path, err)
	}
	return f, nil
}

// Parse reads the file's content and refuses values no node can use.
func Parse(data []byte) (File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return f, err
	}
	switch {
	case f.MTU < 576 || f.MTU > 9216:
		return f, fmt.Errorf("mtu %d (want 576..9216)", f.MTU)
	case f.TunnelPort < 1 || f.TunnelPort > 65535:
		return f, fmt.Errorf("tunnelPort %d (want 1..65535)", f.TunnelPort)
	case f.Encapsulation != v1alpha1.EncapVXLAN && f.Encapsulation != v1alpha1.EncapGeneve:
		return f, fmt.Errorf("encapsulation %q (want vxlan or geneve)", f.Encapsulation)
	}
	return f, nil
}
