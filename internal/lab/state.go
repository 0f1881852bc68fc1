package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/scheme"
)

// Root is where labs keep their state: one directory per lab.
func Root() string {
	if r := os.Getenv("NETSHIFT_LAB_ROOT"); r != "" {
		return r
	}
	// Not below /var/lib/netshift: on a node of real nodes that is the node's own directory.
	return "/var/lib/netshift-lab/labs"
}

// Process is a process the lab started, identified beyond its pid: the kernel
// reuses pids, so the lab signals a pid only while its command name and start
// time are still the ones it recorded.
type Process struct {
	Role  string `json:"role"`
	Pid   int    `json:"pid"`
	Comm  string `json:"comm"`
	Start uint64 `json:"start"` // /proc/PID/stat field 22, clock ticks since boot
}

// State is everything a lab created, written before each thing is created.
type State struct {
	Options    Options   `json:"options"`
	Topology   Topology  `json:"topology"`
	Created    time.Time `json:"created"`
	Netns      []string  `json:"netns"`     // namespaces created, in order
	Processes  []Process `json:"processes"` // processes started
	Kubeconfig string    `json:"kubeconfig,omitempty"`
	Ready      bool      `json:"ready"`
	Probe      *Process  `json:"probe,omitempty"`
	// Neutron is what --neutron made in the lab's neutron-server.
	Neutron *NeutronLab `json:"neutron,omitempty"`
	mu      sync.Mutex  `json:"-"`
	dir     string
}

// Dir is the lab's state directory.
func (s *State) Dir() string { return s.dir }

// Path joins parts under the state directory.
func (s *State) Path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

// LoadState reads the state of lab name.
func LoadState(name string) (*State, error) {
	dir := filepath.Join(Root(), name)
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no lab named %q (no %s)", name, dir)
	}
	if err != nil {
		return nil, err
	}
	s := &State{dir: dir}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("lab %s: %s: %w", name, filepath.Join(dir, "state.json"), err)
	}
	return s, nil
}

func newState(o Options, t Topology) (*State, error) {
	dir := filepath.Join(Root(), o.Name)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return nil, fmt.Errorf("lab %q is already up (state in %s): `netshift lab down --name %s` first, or pick another --name", o.Name, dir, o.Name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &State{Options: o, Topology: t, Created: time.Now(), dir: dir}
	return s, s.Save()
}

// Reload re-reads the state from disk: another process of the lab (its
// supervisor) may have recorded something since.
func (s *State) Reload() error { return s.reload() }

// reload re-reads the state from disk (another process of the lab may have
// recorded something).
func (s *State) reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(s.dir, "state.json"))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, s)
}

// Save writes the state atomically.
func (s *State) Save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked()
}

func (s *State) saveLocked() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, "state.json"))
}

// record applies a change to the state on disk: under a lock shared by every
// process of the lab (up, its supervisor, probe start and stop), it re-reads
// the file, applies add, and writes it back, so no process overwrites what
// another recorded.
func (s *State) record(add func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := os.OpenFile(filepath.Join(s.dir, "state.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if data, err := os.ReadFile(filepath.Join(s.dir, "state.json")); err == nil {
		if err := json.Unmarshal(data, s); err != nil {
			return err
		}
	}
	add()
	return s.saveLocked()
}

// Identify reads a running process's identity.
func Identify(role string, pid int) (Process, error) {
	comm, start, err := procIdentity(pid)
	if err != nil {
		return Process{}, err
	}
	return Process{Role: role, Pid: pid, Comm: comm, Start: start}, nil
}

func procIdentity(pid int) (string, uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// comm is in parentheses and may contain spaces; the fields after it are plain.
	s := string(data)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return "", 0, fmt.Errorf("pid %d: unreadable /proc stat", pid)
	}
	comm := s[open+1 : close]
	fields := strings.Fields(s[close+1:])
	if len(fields) < 20 {
		return "", 0, fmt.Errorf("pid %d: short /proc stat", pid)
	}
	if fields[0] == "Z" {
		return comm, 0, fmt.Errorf("pid %d: zombie", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	return comm, start, err
}

// Alive reports whether the recorded process still runs as itself.
func (p Process) Alive() bool {
	comm, start, err := procIdentity(p.Pid)
	return err == nil && comm == p.Comm && start == p.Start
}

// Stop signals the process (if it is still the one recorded) and waits up to
// grace for it to go, then kills it.
func (p Process) Stop(grace time.Duration) {
	if !p.Alive() {
		return
	}
	_ = syscall.Kill(p.Pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p.Alive() {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
		for i := 0; i < 100 && p.Alive(); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Client is a client of the lab's API server, as its admin.
func (s *State) Client() (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", s.Options.Name, err)
	}
	// No client-side rate limit, as the operator's: a move the lab plays reacts
	// to its plugin pod's annotation as fast as the operator's would.
	cfg.QPS = -1
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}
