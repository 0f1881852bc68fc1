// Package poll is how the lab and its parts wait for something to happen:
// a check every interval, for at most a while, and an error of the caller's
// saying what did not happen.
package poll

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Until checks done every interval until it holds, returns an error, or
// within has passed (then timeout says what did not happen).
func Until(ctx context.Context, interval, within time.Duration, done func(context.Context) (bool, error), timeout func() error) error {
	err := wait.PollUntilContextTimeout(ctx, interval, within, true, done)
	if wait.Interrupted(err) {
		return timeout()
	}
	return err
}
