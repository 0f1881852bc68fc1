package plug

import (
	"slices"
	"testing"
	"time"
)

func TestHandOver(t *testing.T) {
	for _, c := range []struct {
		name      string
		current   string
		next      []string
		boundMain string
		waited    time.Duration
		want      bool
	}{
		{"the source still holds the port: wait", "n1,n2", []string{"n2"}, "n1", 0, false},
		{"the source let go: proceed", "n1,n2", []string{"n2"}, "", 0, true},
		{"the target holds it already: proceed", "n1,n2", []string{"n2"}, "n2", 0, true},
		{"a dead source: proceed after the limit", "n1,n2", []string{"n2"}, "n1", HandOverLimit, true},
		{"a new migration adds a chassis: nothing leaves", "n1", []string{"n1", "n2"}, "n1", 0, true},
		{"bound where netshift never asked: proceed", "n1,n2", []string{"n2"}, "n9", 0, true},
	} {
		if got := HandOver(c.current, c.next, c.boundMain, c.waited, HandOverLimit); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLeaving(t *testing.T) {
	for _, c := range []struct {
		current string
		next    []string
		want    []string
	}{
		{"n1,n2", []string{"n2"}, []string{"n1"}},
		{"n1", []string{"n1", "n2"}, nil},
		{"", []string{"n1"}, nil},
		{"n1,n2", []string{"n3"}, []string{"n1", "n2"}},
	} {
		if got := Leaving(c.current, c.next); !slices.Equal(got, c.want) {
			t.Errorf("Leaving(%q, %v) = %v, want %v", c.current, c.next, got, c.want)
		}
	}
}
