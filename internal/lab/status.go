package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Status is `netshift lab status`.
type Status struct {
	Name        string          `json:"name"`
	Mode        string          `json:"mode"`
	UnderlayMTU int             `json:"underlayMTU"`
	MTU         int             `json:"mtu"`
	Kubeconfig  string          `json:"kubeconfig,omitempty"`
	Ready       bool            `json:"ready"`
	Healthy     bool            `json:"healthy"`
	Nodes       []NodeStatus    `json:"nodes"`
	Pods        []PodStatus     `json:"pods"`
	Processes   []ProcessStatus `json:"processes"`
	// MemoryMiB is the resident memory of all the lab\'s processes together.
	MemoryMiB float64 `json:"memoryMiB"`
}

// NodeStatus is one node.
type NodeStatus struct {
	Name       string `json:"name"`
	Netns      string `json:"netns"`
	UnderlayIP string `json:"underlayIP"`
	PodCIDR    string `json:"podCIDR"`
	OVSDB      string `json:"ovsdb"`
	OVS        string `json:"ovs"` // "ok" or what is wrong
}

// PodStatus is one pod.
type PodStatus struct {
	Name    string `json:"name"`
	Node    string `json:"node"`
	Netns   string `json:"netns"`
	IP      string `json:"ip"`
	Present bool   `json:"present"` // false once evicted and removed
}

// ProcessStatus is one process the lab started.
type ProcessStatus struct {
	Role      string  `json:"role"`
	Pid       int     `json:"pid"`
	Alive     bool    `json:"alive"`
	MemoryMiB float64 `json:"memoryMiB"`
	// DiedPid is the recorded process's when it died and its monitor started
	// Pid in its place (a crash the lab reports: the lab is not healthy).
	DiedPid int `json:"diedPid,omitempty"`
}

// StatusOf reads a lab's state and checks its parts.
func StatusOf(ctx context.Context, name string) (Status, error) {
	s, err := LoadState(name)
	if err != nil {
		return Status{}, err
	}
	o := s.Options
	mode := string(o.Tunnel)
	if o.OVN {
		mode = "ovn"
	}
	st := Status{Name: o.Name, Mode: mode, UnderlayMTU: o.UnderlayMTU, MTU: o.MTU, Kubeconfig: s.Kubeconfig, Ready: s.Ready, Healthy: s.Ready}
	sh, err := newShell(os.DevNull)
	if err != nil {
		return st, err
	}
	defer sh.close()
	for _, n := range s.Topology.Nodes {
		ns := NodeStatus{Name: n.Name, Netns: n.Netns, UnderlayIP: n.UnderlayIP, PodCIDR: n.PodCIDR, OVSDB: s.OVSDB(n.Name), OVS: "ok"}
		if _, err := s.vsctl(ctx, sh, n.Name, "--timeout=2", "br-exists", "br-int"); err != nil {
			ns.OVS, st.Healthy = "unreachable: "+err.Error(), false
		}
		st.Nodes = append(st.Nodes, ns)
	}
	if s.Ready {
		pods, err := s.Pods(ctx)
		if err != nil {
			return st, err
		}
		for _, p := range pods {
			// A pod the API has with an address but its node's runtime has not is unhealthy.
			st.Pods = append(st.Pods, PodStatus{Name: p.Name, Node: p.Node, Netns: p.Netns, IP: p.IP, Present: p.Netns != ""})
			st.Healthy = st.Healthy && p.Netns != ""
		}
	}
	for _, recorded := range s.Processes {
		p := s.restarted(recorded)
		alive := p.Alive()
		ps := ProcessStatus{Role: p.Role, Pid: p.Pid, Alive: alive}
		if p.Pid != recorded.Pid {
			ps.DiedPid, st.Healthy = recorded.Pid, false
		}
		if alive {
			ps.MemoryMiB = rssMiB(p.Pid)
			st.MemoryMiB += ps.MemoryMiB
		} else {
			st.Healthy = false
		}
		st.Processes = append(st.Processes, ps)
	}
	return st, nil
}

// WriteText prints the status for a person.
func (st Status) WriteText(w io.Writer) error {
	health := "healthy"
	if !st.Healthy {
		health = "NOT healthy"
	}
	if !st.Ready {
		health += ", not ready"
	}
	fmt.Fprintf(w, "lab %s: %s, underlay MTU %d, pod MTU %d, %s\n", st.Name, st.Mode, st.UnderlayMTU, st.MTU, health)
	if st.Kubeconfig != "" {
		fmt.Fprintf(w, "KUBECONFIG=%s\n", st.Kubeconfig)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nNODE\tNETNS\tUNDERLAY\tPOD CIDR\tOVS")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.Netns, n.UnderlayIP, n.PodCIDR, n.OVS)
	}
	fmt.Fprintln(tw, "\nPOD\tNODE\tNETNS\tIP\tPRESENT")
	for _, p := range st.Pods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", p.Name, p.Node, p.Netns, p.IP, p.Present)
	}
	fmt.Fprintln(tw, "\nPROCESS\tPID\tALIVE\tMEMORY")
	for _, p := range st.Processes {
		alive := fmt.Sprint(p.Alive)
		if p.DiedPid != 0 {
			alive += fmt.Sprintf(" (pid %d died: its monitor started this one)", p.DiedPid)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f MiB\n", p.Role, p.Pid, alive, p.MemoryMiB)
	}
	fmt.Fprintf(tw, "total\t\t\t%.0f MiB\n", st.MemoryMiB)
	return tw.Flush()
}

// ExecTarget resolves a node or pod name to its network namespace (a name
// under /run/netns, or a path for a real pod) and the environment that points
// OVS tools at the node's own OVS.
func (s *State) ExecTarget(ctx context.Context, name string) (string, []string, error) {
	if n, ok := s.Topology.Node(name); ok {
		return n.Netns, append(s.ovsEnv(n.Name), "OVN_RUNDIR="+s.nodeDir(n.Name)), nil
	}
	pods, err := s.Pods(ctx)
	if err != nil {
		return "", nil, err
	}
	for _, p := range pods {
		if p.Name == name && p.Netns != "" {
			return p.Netns, nil, nil
		}
	}
	return "", nil, fmt.Errorf("lab %s has no node or pod named %q", s.Options.Name, name)
}

// Pods are the lab's workload pods the API lists, each with the network
// namespace its node's runtime holds.
func (s *State) Pods(ctx context.Context) ([]PodSpec, error) {
	c, err := s.Client()
	if err != nil {
		return nil, err
	}
	return s.realPods(ctx, c)
}

// rssMiB reads a process's resident memory.
func rssMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb); err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}

// restarted is the process a recorded one's monitor started again in its
// place (a node's ovs-vswitchd under OVN-Kubernetes), or p itself.
func (s *State) restarted(p Process) Process {
	node, ok := strings.CutPrefix(p.Role, "ovs-vswitchd:")
	if !ok || !s.runsOVNKubernetes() || p.Alive() {
		return p
	}
	pid, err := readPidfile(filepath.Join(s.nodeDir(node), "ovs-vswitchd.pid"))
	if err != nil {
		return p
	}
	if now, err := Identify(p.Role, pid); err == nil && now.Comm == p.Comm {
		return now
	}
	return p
}
