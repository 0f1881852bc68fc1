package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// startControllers starts kube-controller-manager (running the named
// controllers, "*" for all) and, if asked, kube-scheduler, with identities of
// their own (the users the API server's RBAC bootstrap binds): so that
// Deployments and DaemonSets get pods, pods get nodes and tokens, and
// PodDisruptionBudgets are enforced by the real disruption controller.
func (cp *ControlPlane) startControllers(dir string, controllers []string, scheduler bool) error {
	if dir == "" {
		return fmt.Errorf("a control plane with controllers needs a directory for their files")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	api := cp.Env.ControlPlane.APIServer
	cp.CAFile = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(cp.CAFile, api.CA, 0o644); err != nil {
		return err
	}
	kcm, err := cp.UserKubeconfig(dir, "system:kube-controller-manager")
	if err != nil {
		return err
	}
	sched, err := cp.UserKubeconfig(dir, "system:kube-scheduler")
	if err != nil {
		return err
	}
	type process struct {
		name string
		args []string
	}
	procs := []process{
		{"kube-controller-manager", []string{"--kubeconfig=" + kcm, "--authentication-kubeconfig=" + kcm, "--authorization-kubeconfig=" + kcm,
			"--service-account-private-key-file=" + filepath.Join(api.CertDir, "sa-signer.key"), "--root-ca-file=" + cp.CAFile,
			"--use-service-account-credentials=true", "--leader-elect=false", "--controllers=" + strings.Join(controllers, ","),
			"--bind-address=127.0.0.1", "--secure-port=0", "--v=1"}},
	}
	if scheduler {
		procs = append(procs, process{"kube-scheduler", []string{"--kubeconfig=" + sched, "--authentication-kubeconfig=" + sched, "--authorization-kubeconfig=" + sched,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--v=1"}})
	}
	for _, c := range procs {
		logf, err := os.Create(filepath.Join(dir, c.name+".log"))
		if err != nil {
			return err
		}
		cmd := exec.Command(filepath.Join(cp.AssetsDir, c.name), c.args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return fmt.Errorf("start %s from %s: %w", c.name, cp.AssetsDir, err)
		}
		ctl := &controller{cmd: cmd, done: make(chan struct{})}
		cp.controllers = append(cp.controllers, ctl)
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(ctl.done) }()
		// A bad flag or an unreachable API server ends them at once.
		select {
		case <-ctl.done:
			return fmt.Errorf("%s exited at start (%v); see %s", c.name, waitErr, logf.Name())
		case <-time.After(300 * time.Millisecond):
		}
	}
	return nil
}

// controller is a control plane process this one started.
type controller struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Pid is the process's pid, for a supervisor that records it.
func (c *controller) Pid() int { return c.cmd.Process.Pid }

func (cp *ControlPlane) stopControllers() {
	for _, c := range cp.controllers {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range cp.controllers {
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
	cp.controllers = nil
}

// ControllerPids are the pids of kube-controller-manager and kube-scheduler,
// for a supervisor that records its processes.
func (cp *ControlPlane) ControllerPids() map[string]int {
	out := map[string]int{}
	for _, c := range cp.controllers {
		out[filepath.Base(c.cmd.Path)] = c.Pid()
	}
	return out
}
