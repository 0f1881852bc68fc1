package portpool

import (
	"strings"
	"testing"
	"time"
)

func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, tc := range map[string]struct {
		change func(*Settings)
		want   string
	}{
		"negative minimum":    {func(s *Settings) { s.MinReady = -1 }, "minReady: -1 is out of range 0..10000"},
		"zero batch":          {func(s *Settings) { s.Batch = 0 }, "batch: 0 is out of range 1..500"},
		"huge batch":          {func(s *Settings) { s.Batch = 501 }, "batch: 501 is out of range 1..500"},
		"max below minimum":   {func(s *Settings) { s.MaxSize = 2 }, "maxSize: 2 is below minReady (5)"},
		"negative max":        {func(s *Settings) { s.MaxSize = -3 }, "maxSize: -3 is out of range"},
		"negative idle":       {func(s *Settings) { s.IdleTimeout = -time.Second }, "idleTimeout: -1s is negative"},
		"recycle too fast":    {func(s *Settings) { s.RecyclePeriod = time.Millisecond }, "recyclePeriod: 1ms is out of range 10ms..1h"},
		"no concurrent calls": {func(s *Settings) { s.MaxConcurrentCreates = 0 }, "maxConcurrentCreates: 0 is out of range 1..64"},
	} {
		s := DefaultSettings()
		tc.change(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	two := DefaultSettings()
	two.Batch, two.MinReady = 0, -1
	if err := two.Validate(); err == nil || !strings.Contains(err.Error(), "batch") || !strings.Contains(err.Error(), "minReady") {
		t.Errorf("every bad field is named: %v", err)
	}
}
