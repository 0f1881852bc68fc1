package portpool

import (
	"errors"
	"fmt"
	"time"
)

// Settings bound every pool.
type Settings struct {
	// MinReady is how many ready ports a pool keeps: below it, a batch is created.
	MinReady int `json:"minReady"`
	// Batch is how many ports one bulk create makes.
	Batch int `json:"batch"`
	// MaxSize caps a pool's ports (ready, in use, being recycled or created); 0 is unbounded.
	MaxSize int `json:"maxSize"`
	// IdleTimeout is how long a ready port above MinReady may stay unused before it is
	// deleted; 0 keeps them.
	IdleTimeout time.Duration `json:"idleTimeout"`
	// RecyclePeriod is how often released ports are reset and returned to their pools.
	RecyclePeriod time.Duration `json:"recyclePeriod"`
	// MaxConcurrentCreates caps the create calls in flight to Neutron, over all pools.
	MaxConcurrentCreates int `json:"maxConcurrentCreates"`
}

// DefaultSettings are safe for a small cloud: they never send Neutron more
// than two creates of ten ports at once.
func DefaultSettings() Settings {
	return Settings{MinReady: 5, Batch: 10, MaxSize: 0, IdleTimeout: 30 * time.Minute, RecyclePeriod: 5 * time.Second, MaxConcurrentCreates: 2}
}

// Limits of the settings.
const (
	maxMinReady = 10000
	maxBatch    = 500
)

// Validate names every field out of range, with the range.
func (s Settings) Validate() error {
	var errs []error
	if s.MinReady < 0 || s.MinReady > maxMinReady {
		errs = append(errs, fmt.Errorf("minReady: %d is out of range 0..%d", s.MinReady, maxMinReady))
	}
	if s.Batch < 1 || s.Batch > maxBatch {
		errs = append(errs, fmt.Errorf("batch: %d is out of range 1..%d", s.Batch, maxBatch))
	}
	if s.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("maxSize: %d is out of range: 0 (unbounded) or at least minReady (%d)", s.MaxSize, s.MinReady))
	} else if s.MaxSize > 0 && s.MaxSize < s.MinReady {
		errs = append(errs, fmt.Errorf("maxSize: %d is below minReady (%d): 0 (unbounded) or at least minReady", s.MaxSize, s.MinReady))
	}
	if s.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("idleTimeout: %s is negative: 0 (never expire) or more", s.IdleTimeout))
	}
	if s.RecyclePeriod < 10*time.Millisecond || s.RecyclePeriod > time.Hour {
		errs = append(errs, fmt.Errorf("recyclePeriod: %s is out of range 10ms..1h", s.RecyclePeriod))
	}
	if s.MaxConcurrentCreates < 1 || s.MaxConcurrentCreates > 64 {
		errs = append(errs, fmt.Errorf("maxConcurrentCreates: %d is out of range 1..64", s.MaxConcurrentCreates))
	}
	return errors.Join(errs...)
}
