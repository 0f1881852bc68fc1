package plug

import (
	"encoding/json"
	"fmt"

	"netshift.io/netshift/api/v1alpha1"
)

// The pod annotations plugging reads, and the condition it writes.
const (
	// PortSpecAnnotation on a pod is the port to plug for it (a Port in
	// JSON); it takes precedence over PoolAnnotation.
	PortSpecAnnotation = "netshift.io/port-spec"
	// PoolAnnotation is the port a Neutron port pool handed the pod
	// ({"id": ..., "mac": ...}, see internal/portpool/manager).
	PoolAnnotation = "netshift.io/port"
	// ModeAnnotation on a Node sets its plug mode (per-port or direct),
	// overriding the agent's --plug-mode.
	ModeAnnotation = "netshift.io/plug-mode"
	// MigrationTargetAnnotation marks a pod as the target of a VM's migration
	// (its value names the source pod): while both exist, the port's source
	// chassis stays its main one.
	MigrationTargetAnnotation = "netshift.io/migration-target"
	// ReadyCondition is the pod condition the agent sets once the pod's port
	// is bound and its flows are in place: usable as a readiness gate, and
	// what a migration waits for before it resumes the VM.
	ReadyCondition = v1alpha1.PodNetworkReady
)

// PortOf reads the port a pod is to be plugged with; podUID fills vm-uuid
// when the spec names none. It reports false when the pod has no port, or
// its pooled port is a trunk's subport (plugged by netshift-cni alone).
func PortOf(annotations map[string]string, podUID string) (Port, bool, error) {
	var p Port
	if raw, ok := annotations[PortSpecAnnotation]; ok {
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return Port{}, true, fmt.Errorf("annotation %s: %v", PortSpecAnnotation, err)
		}
	} else if raw, ok := annotations[PoolAnnotation]; ok {
		var a struct {
			ID             string `json:"id"`
			MAC            string `json:"mac"`
			SegmentationID int    `json:"segmentationID"`
		}
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			return Port{}, true, fmt.Errorf("annotation %s: %v", PoolAnnotation, err)
		}
		if a.SegmentationID != 0 {
			// A trunk's subport (a pod in a VM): netshift-cni plugs it on the
			// node's trunk bridge; there is nothing to plug on the integration bridge.
			return Port{}, false, nil
		}
		p = Port{ID: a.ID, MAC: a.MAC}
	} else {
		return Port{}, false, nil
	}
	p = p.WithDefaults(podUID)
	if err := p.Validate(); err != nil {
		return Port{}, true, fmt.Errorf("pod's port: %w", err)
	}
	return p, true, nil
}
