package lab

import (
	"context"
	"errors"
)

func (s *State) buildOVN(ctx context.Context, sh *shell, progress func(string, ...any)) error {
	return errors.New("OVN mode: not built yet")
}

func (s *State) bindOVNPod(ctx context.Context, sh *shell, p PodSpec) error {
	return errors.New("OVN mode: not built yet")
}
