package status

import (
	"sort"

	"netshift.io/netshift/api/v1alpha1"
)

// Skew is how far a live change's steps started from their scheduled time.
type Skew struct {
	// Node and Step are where the worst start was.
	Node string              `json:"node"`
	Step v1alpha1.StepAction `json:"step"`
	// LateMicros is how late (negative: early) that step started.
	LateMicros int64 `json:"lateMicros"`
	// WaitedMicros is how long that step's thread waited for a processor
	// (v1alpha1.StepResult.WaitedMicros): lateness that was the node's CPUs.
	WaitedMicros int64 `json:"waitedMicros,omitempty"`
	// SpreadMicros is, over the change's steps, the widest gap between the
	// first and the last node starting the same step: what the network sees
	// as nodes out of step.
	SpreadMicros int64 `json:"spreadMicros"`
	// Steps is how many step reports it was read from.
	Steps int `json:"steps"`
}

// changeSkew reads the worst skew of change id from the nodes' reports; nil
// when no node reported a timed step of it.
func changeSkew(states []v1alpha1.NetshiftNodeState, id string) *Skew {
	var worst *Skew
	starts := map[v1alpha1.StepAction][]int64{}
	steps := 0
	for _, st := range states {
		rep := st.Status.LiveChange
		if rep == nil || rep.ID != id {
			continue
		}
		for _, s := range rep.Steps {
			if s.ScheduledAt == nil {
				continue
			}
			steps++
			starts[s.Action] = append(starts[s.Action], s.At.UnixMicro())
			if worst == nil || abs(s.LateMicros) > abs(worst.LateMicros) {
				worst = &Skew{Node: st.Name, Step: s.Action, LateMicros: s.LateMicros, WaitedMicros: s.WaitedMicros}
			}
		}
	}
	if worst == nil {
		return nil
	}
	worst.Steps = steps
	for _, at := range starts {
		sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
		if spread := at[len(at)-1] - at[0]; spread > worst.SpreadMicros {
			worst.SpreadMicros = spread
		}
	}
	return worst
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
