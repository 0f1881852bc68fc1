//go:build lab

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// LabPods reads the pods of a lab node whose pods are bare network namespaces
// (the process lab, which has no container runtime) from the file the lab
// writes for the node: a list of PodNetwork. Lab builds only.
type LabPods struct{ File string }

// PodNetworks reads the file; a pod whose namespace is gone is skipped.
func (l LabPods) PodNetworks(context.Context) ([]PodNetwork, []string, error) {
	data, err := os.ReadFile(l.File)
	if err != nil {
		return nil, nil, fmt.Errorf("lab pods: %w", err)
	}
	var all []PodNetwork
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, nil, fmt.Errorf("lab pods %s: %w", l.File, err)
	}
	var pods []PodNetwork
	var skipped []string
	for _, p := range all {
		if _, err := os.Stat(p.Netns); err != nil {
			skipped = append(skipped, fmt.Sprintf("pod %s: gone: %v", p.Pod, err))
			continue
		}
		pods = append(pods, p)
	}
	return pods, skipped, nil
}
