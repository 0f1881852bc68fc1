package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// shell runs the lab's commands (ip, ovs-vsctl, ...) and logs each one to
// the lab's commands.log, so a failed set-up can be read afterwards.
type shell struct {
	mu  sync.Mutex
	log *os.File
}

func newShell(path string) (*shell, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &shell{log: f}, nil
}

func (sh *shell) close() { _ = sh.log.Close() }

// run runs one command with extra environment and returns its output; the
// error quotes the command and what it printed.
func (sh *shell) run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	// A command never outlives a killed lab up (daemons detach: their forked
	// process is not this one and stays).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	line := strings.Join(append([]string{name}, args...), " ")
	sh.mu.Lock()
	fmt.Fprintf(sh.log, "%s %6.1fms %s\n", time.Now().Format("15:04:05.000"), float64(time.Since(start).Microseconds())/1000, line)
	if err != nil {
		fmt.Fprintf(sh.log, "  -> %v: %s\n", err, strings.TrimSpace(out.String()))
	}
	sh.mu.Unlock()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", line, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Run is run, for the lab's packages (ovnic.Runner).
func (sh *shell) Run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	return sh.run(ctx, env, name, args...)
}

// ip runs `ip ARGS`.
func (sh *shell) ip(ctx context.Context, args ...string) error {
	_, err := sh.run(ctx, nil, "ip", args...)
	return err
}

// inNetns runs a command inside a network namespace.
func (sh *shell) inNetns(ctx context.Context, netns string, env []string, name string, args ...string) (string, error) {
	return sh.run(ctx, env, "ip", append([]string{"netns", "exec", netns, name}, args...)...)
}
