package kubenode

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func runCtx(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives a killed lab up
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
