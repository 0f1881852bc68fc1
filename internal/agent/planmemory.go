package agent

import (
	"time"

	"netshift.io/netshift/api/v1alpha1"
)

// planMemory is what this agent reported of each live change plan. Its cache
// can show the node's state from before its own latest report (on a busy API
// server the watch lags by seconds): a precondition check is not taken again
// and a step is never run again because of that. A restarted agent starts
// empty, and reads what it reported from the state.
type planMemory struct {
	answered map[string]bool
	steps    map[string]map[v1alpha1.StepAction]bool
	finished map[string]bool
	// staleSince is when the state was first seen older than the memory, per plan.
	staleSince map[string]time.Time
	// seenPlan and seenAt are the latest plan this agent took up and when it first did
	// (its clock), which its answer measures the plan's delivery by; seenAt is zero when
	// that moment says nothing of the delivery: the plan came while the agent was still
	// checking the one it replaced.
	seenPlan string
	seenAt   time.Time
	// checkWithdrawn is set when a precondition check ended with its plan withdrawn.
	checkWithdrawn bool
}

// firstSeen is when the agent first took up plan id, at now: an answer whose
// write failed is checked again, and its delivery is still from the first
// time. Zero when the plan came during the check of the one it replaced,
// which the agent took up only once that check noticed.
func (m *planMemory) firstSeen(id string, now time.Time) time.Time {
	if m.seenPlan != id {
		m.seenPlan, m.seenAt = id, now
		if m.checkWithdrawn {
			m.seenAt = time.Time{}
		}
	}
	m.checkWithdrawn = false
	return m.seenAt
}

// noPlan records that the node has no plan: a check withdrawn by an abort
// held no plan up.
func (m *planMemory) noPlan() { m.checkWithdrawn = false }

// withdrawnDuringCheck records that a precondition check ended with its plan withdrawn.
func (m *planMemory) withdrawnDuringCheck() { m.checkWithdrawn = true }

// staleFor is how long a state may look older than what the agent reported
// before the agent trusts the state instead: one deleted and made again
// (its reports gone) is not a cache that lags.
const staleFor = 30 * time.Second

func (m *planMemory) init() {
	if m.answered == nil {
		m.answered, m.steps, m.finished = map[string]bool{}, map[string]map[v1alpha1.StepAction]bool{}, map[string]bool{}
		m.staleSince = map[string]time.Time{}
	}
}

// answer records that the plan's preconditions (or a rollback's readiness) were reported.
func (m *planMemory) answer(id string) {
	m.init()
	m.answered[id] = true
}

// answeredHere says whether this process answered plan id (a restarted agent has not).
func (m *planMemory) answeredHere(id string) bool { return m.answered[id] }

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

// stale says whether the state's report of plan id is older than what this
// agent reported, at now; past staleFor it forgets the plan and trusts the state.
func (m *planMemory) stale(id string, rep *v1alpha1.LiveChangeReport, now time.Time) bool {
	m.init()
	if !m.older(id, rep) {
		delete(m.staleSince, id)
		return false
	}
	since, ok := m.staleSince[id]
	if !ok {
		m.staleSince[id] = now
		return true
	}
	if now.Sub(since) < staleFor {
		return true
	}
	delete(m.answered, id)
	delete(m.steps, id)
	delete(m.finished, id)
	delete(m.staleSince, id)
	return false
}

func (m *planMemory) older(id string, rep *v1alpha1.LiveChangeReport) bool {
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
