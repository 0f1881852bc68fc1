package kubenode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a process the node started, for the lab to record.
type Proc struct {
	Role string
	Pid  int
}

// Recorder is told of every process right after it starts, before anything
// else can fail: a crash then still leaves it recorded for `lab down`.
type Recorder func(Proc) error

// StartHolder starts the process that keeps the node's mount namespace: a
// private one, made inside the node's network namespace, in which every
// per-node path is bound. It returns once the binds are in place.
func (n Node) StartHolder(ctx context.Context, record Recorder) (int, error) {
	if err := n.Validate(); err != nil {
		return 0, err
	}
	binds, err := n.binds()
	if err != nil {
		return 0, err
	}
	ready := filepath.Join(n.Dir, "holder.ready")
	_ = os.Remove(ready)
	// A bind over a directory that holds the node's own directory (the lab's files under
	// /var/lib/netshift, say) would hide the sources of the binds after it: those go last.
	sort.SliceStable(binds, func(i, j int) bool {
		return !holds(binds[i][1], n.Dir) && holds(binds[j][1], n.Dir)
	})
	var script strings.Builder
	// A machine of its own has its own host name: the node's, which its host-network pods see.
	fmt.Fprintf(&script, "set -e\nhostname %s\n", shellQuote(n.Name))
	for _, b := range binds {
		fmt.Fprintf(&script, "mount --bind %s %s\n", shellQuote(b[0]), shellQuote(b[1]))
	}
	for _, m := range n.Shared {
		fmt.Fprintf(&script, "mount --make-shared %s\n", shellQuote(m))
	}
	fmt.Fprintf(&script, "echo $$ > %s\nexec sleep infinity\n", shellQuote(ready))
	logf, err := n.logFile("holder")
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	// nsenter -F and unshare without --fork exec in place: the pid started is the holder's.
	cmd := exec.Command("nsenter", "-F", "--net=/run/netns/"+n.Netns, "--",
		"unshare", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c", script.String())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("node %s: mount namespace holder: %w", n.Name, err)
	}
	pid := cmd.Process.Pid
	go func() { _ = cmd.Wait() }() // reaped here; the lab tracks it by pid and start time
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Recorded once it is the holder for good (sleep): the lab knows a process by its
		// command name and start time, and nsenter, unshare and sh come before.
		if data, err := os.ReadFile(ready); err == nil && strings.TrimSpace(string(data)) == strconv.Itoa(pid) && waitExec(pid, "sleep") {
			return pid, record(Proc{Role: "holder:" + n.Name, Pid: pid})
		}
		if cmd.ProcessState != nil || syscall.Kill(pid, 0) != nil {
			return pid, fmt.Errorf("node %s: mount namespace holder exited; %s ends:\n%s", n.Name, logf.Name(), lastLines(logf.Name(), 10))
		}
		if time.Now().After(deadline) {
			return pid, fmt.Errorf("node %s: mount namespace holder not ready after 10 s; see %s", n.Name, logf.Name())
		}
		select {
		case <-ctx.Done():
			return pid, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startInNode starts a daemon inside the node's mount and network namespaces.
func (n Node) startInNode(holder int, role string, record Recorder, bin string, args ...string) (int, error) {
	logf, err := n.logFile(role)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", append([]string{"-F", fmt.Sprintf("--mount=/proc/%d/ns/mnt", holder), fmt.Sprintf("--uts=/proc/%d/ns/uts", holder), "--net=/run/netns/" + n.Netns, "--", bin}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("node %s: start %s: %w", n.Name, role, err)
	}
	go func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if !waitExec(pid, filepath.Base(bin)) {
		return pid, fmt.Errorf("node %s: %s (pid %d) did not start; %s ends:\n%s", n.Name, role, pid, n.LogPath(role), lastLines(n.LogPath(role), 15))
	}
	return pid, record(Proc{Role: role + ":" + n.Name, Pid: pid})
}

// waitExec waits, briefly, until process pid runs the program named comm (a
// command name has at most 15 bytes) rather than nsenter, which execs it.
func waitExec(pid int, comm string) bool {
	if len(comm) > 15 {
		comm = comm[:15]
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			return false
		}
		if strings.TrimSpace(string(data)) == comm {
			return true
		}
	}
	return false
}

// LogPath is where a node process's output goes.
func (n Node) LogPath(role string) string { return filepath.Join(n.Dir, "logs", role+".log") }

func (n Node) logFile(role string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Join(n.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(n.LogPath(role), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
}

// InNode runs a command inside the node's mount and network namespaces and
// returns its combined output.
func (n Node) InNode(ctx context.Context, holder int, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{fmt.Sprintf("--mount=/proc/%d/ns/mnt", holder), fmt.Sprintf("--uts=/proc/%d/ns/uts", holder), "--net=/run/netns/" + n.Netns, "--", bin}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives its caller
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("node %s: %s %s: %w: %s", n.Name, bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// lastLines is the end of a log, for an error that points at it.
func lastLines(path string, count int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > count {
		lines = lines[len(lines)-count:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 50 ms until it holds, the process pid dies, or
// the timeout passes; the error names what and points at the log.
func (n Node) waitFor(ctx context.Context, what string, pid int, role string, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if syscall.Kill(pid, 0) != nil {
			return fmt.Errorf("node %s: %s exited before %s; %s ends:\n%s", n.Name, role, what, n.LogPath(role), lastLines(n.LogPath(role), 15))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: %s not %s after %s; %s ends:\n%s", n.Name, role, what, timeout, n.LogPath(role), lastLines(n.LogPath(role), 15))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// holds says whether directory dir is path or one of its parents.
func holds(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
