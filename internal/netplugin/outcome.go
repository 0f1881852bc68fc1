package netplugin

import (
	"fmt"
	"time"
)

// MaxSkipped bounds the pods a step report lists (the API's limit).
const MaxSkipped = 20

// Outcome is what one step did on a node.
type Outcome struct {
	// Changed counts the interfaces (or records) the step set.
	Changed int
	// Skipped are the pods or interfaces the step left alone, each with why.
	Skipped []string
	// Committed is when a step that is one database transaction was committed.
	Committed time.Time
	// Waited is how long the step's thread waited for a processor from its
	// wake to its end (measured by the agent).
	Waited time.Duration
}

// Skip records a pod or an interface the step left alone, with why.
func (o *Outcome) Skip(format string, args ...any) {
	o.Skipped = append(o.Skipped, fmt.Sprintf(format, args...))
}

// Report is the list a step result carries: at most MaxSkipped, and how many more.
func (o Outcome) Report() []string {
	if len(o.Skipped) <= MaxSkipped {
		return o.Skipped
	}
	out := append([]string(nil), o.Skipped[:MaxSkipped-1]...)
	return append(out, fmt.Sprintf("and %d more", len(o.Skipped)-MaxSkipped+1))
}
