package agent

import "netshift.io/netshift/api/v1alpha1"

// planMemory is what this agent reported of each live change plan. Its cache
// can show the node's state from before its own latest report (on a busy API
// server the watch lags by seconds): a precondition check is not taken again
// and a step is never run again because of that. A restarted agent starts
// empty, and reads what it reported from the state.
type planMemory struct {
	answered map[string]bool
	steps    map[string]map[v1alpha1.StepAction]bool
	finished map[string]bool
}

func (m *planMemory) init() {
	if m.answered == nil {
		m.answered, m.steps, m.finished = map[string]bool{}, map[string]map[v1alpha1.StepAction]bool{}, map[string]bool{}
	}
}

// answer records that the plan's preconditions (or a rollback's readiness) were reported.
func (m *planMemory) answer(id string) {
	m.init()
	m.answered[id] = true
}

// ran records steps reported, and the node's part done when done.
func (m *planMemory) ran(id string, results []v1alpha1.StepResult, done bool) {
	m.init()
	if m.steps[id] == nil {
		m.steps[id] = map[v1alpha1.StepAction]bool{}
	}
	for _, r := range results {
		m.steps[id][r.Action] = true
	}
	if done {
		m.finished[id] = true
	}
}

// stale says whether the state's report of plan id is older than what this agent reported.
func (m *planMemory) stale(id string, rep *v1alpha1.LiveChangeReport) bool {
	m.init()
	if rep == nil || rep.ID != id {
		return m.answered[id]
	}
	if m.finished[id] && !rep.Done {
		return true
	}
	for action := range m.steps[id] {
		if !reportHas(rep, action) {
			return true
		}
	}
	return false
}

func reportHas(rep *v1alpha1.LiveChangeReport, action v1alpha1.StepAction) bool {
	for _, s := range rep.Steps {
		if s.Action == action {
			return true
		}
	}
	return false
}
