// Package cri reads a node's pods from its container runtime, over the CRI:
// each pod sandbox, the process that holds its network namespace, and the
// interfaces its CNI result names. This is where the agent learns which pods
// a live change must touch, never from pod or node metadata, which tenants
// can write.
package cri

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Sandbox is one ready pod sandbox of the node.
type Sandbox struct {
	ID                   string
	Namespace, Name, UID string
	// Pid holds the sandbox's namespaces (its pause process).
	Pid int
	// HostNetwork: the pod shares the node's network namespace (nothing of it to change).
	HostNetwork bool
	// PodInterfaces are the interfaces the CNI result puts in the pod's namespace.
	PodInterfaces []string
	// HostInterfaces are the interfaces the CNI result names on the node's side,
	// as the network plugin reported them: to be checked before they are touched.
	HostInterfaces []string
}

// String names the pod for errors and logs.
func (s Sandbox) String() string { return s.Namespace + "/" + s.Name }

// verboseInfo is the part of containerd's verbose sandbox status netshift reads.
type verboseInfo struct {
	Pid                int  `json:"pid"`
	NetNamespaceClosed bool `json:"netNamespaceClosed"`
	CNIResult          *struct {
		Interfaces map[string]*struct {
			Sandbox string `json:"Sandbox"`
		} `json:"Interfaces"`
	} `json:"cniResult"`
}

// ParseSandbox reads a sandbox from its CRI status and the runtime's verbose
// information. ok is false for a sandbox with nothing to change: not ready,
// its network namespace closed, or sharing the node's.
func ParseSandbox(st *runtimeapi.PodSandboxStatus, info map[string]string) (s Sandbox, ok bool, err error) {
	if st == nil || st.Metadata == nil {
		return s, false, fmt.Errorf("sandbox without metadata")
	}
	s = Sandbox{ID: st.Id, Namespace: st.Metadata.Namespace, Name: st.Metadata.Name, UID: st.Metadata.Uid}
	if st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return s, false, nil
	}
	if ns := st.GetLinux().GetNamespaces().GetOptions(); ns != nil && ns.Network == runtimeapi.NamespaceMode_NODE {
		s.HostNetwork = true
		return s, false, nil
	}
	raw, found := info["info"]
	if !found {
		return s, false, fmt.Errorf("sandbox %s of pod %s: the runtime gave no verbose information (containerd's \"info\")", s.ID, s)
	}
	var vi verboseInfo
	if err := json.Unmarshal([]byte(raw), &vi); err != nil {
		return s, false, fmt.Errorf("sandbox %s of pod %s: verbose information: %w", s.ID, s, err)
	}
	if vi.NetNamespaceClosed {
		return s, false, nil
	}
	if vi.Pid <= 1 {
		return s, false, fmt.Errorf("sandbox %s of pod %s: no process holds it (pid %d)", s.ID, s, vi.Pid)
	}
	s.Pid = vi.Pid
	if vi.CNIResult != nil {
		for name, ifc := range vi.CNIResult.Interfaces {
			if ifc == nil || name == "lo" { // the runtime's own loopback network, not a pod link
				continue
			}
			if ifc.Sandbox != "" {
				s.PodInterfaces = append(s.PodInterfaces, name)
			} else {
				s.HostInterfaces = append(s.HostInterfaces, name)
			}
		}
	}
	sort.Strings(s.PodInterfaces)
	sort.Strings(s.HostInterfaces)
	return s, true, nil
}

// NetnsPath is the sandbox's network namespace through its process, for an
// agent that shares the node's process namespace (hostPID). The process is
// checked to still be the sandbox's, by the sandbox's ID in its cgroup path,
// so a pid reused after the sandbox died is never entered.
func (s Sandbox) NetnsPath(procRoot string) (string, error) {
	proc := filepath.Join(procRoot, fmt.Sprint(s.Pid))
	cg, err := os.ReadFile(filepath.Join(proc, "cgroup"))
	if err != nil {
		return "", fmt.Errorf("pod %s: sandbox process %d: %w", s, s.Pid, err)
	}
	if !strings.Contains(string(cg), s.ID) {
		return "", fmt.Errorf("pod %s: process %d is no longer sandbox %s", s, s.Pid, shortID(s.ID))
	}
	return filepath.Join(proc, "ns", "net"), nil
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
