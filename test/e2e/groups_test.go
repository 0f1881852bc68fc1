package e2e

import "testing"

// The tests that need a lab of the same kind share one, as the steps of one
// test, in an order in which each leaves the lab as the next expects it: a
// lab's up and down cost some 20 s each. A step that fails stops the ones
// after it, which would start from a lab in a state nobody checked.

// labStep is one test run in a shared lab, given its name.
type labStep struct {
	name string
	run  func(t *testing.T, name string)
}

// runSteps runs the steps in order, stopping at the first that fails.
func runSteps(t *testing.T, name string, steps []labStep) {
	t.Helper()
	for _, step := range steps {
		if !t.Run(step.name, func(t *testing.T) { step.run(t, name) }) {
			t.Fatalf("%s failed: the steps after it did not run", step.name)
		}
	}
}

// TestDefaultLab: the tests of the lab as `lab up` makes it (3 nodes, 2 pods
// each, VXLAN).
func TestDefaultLab(t *testing.T) {
	const name = "e2edl"
	up(t, name)
	runSteps(t, name, []labStep{
		{"ProbeOnAnUntouchedLab", probeOnAnUntouchedLab}, // first: the lab as it came up
		{"ProbeDetectsABrokenTunnel", probeDetectsABrokenTunnel},
		{"RestartsDuringAChange", restartsDuringAChange}, // last: it leaves the MTU at 1350
	})
}

// TestTwoNodeLab: the tests of a 2-node lab with a pod per node.
func TestTwoNodeLab(t *testing.T) {
	const name = "e2e2n"
	up(t, name, "--nodes", "2", "--pods-per-node", "1", "--node-label", "node-2:zone=b")
	runSteps(t, name, []labStep{
		{"StatusJSONAndExec", labStatusJSONAndExec},
		{"OneLabOfRealNodesAtATime", oneLabOfRealNodesAtATime},
		{"EvictedPodIsRemoved", evictedPodIsRemoved},
		{"AbortBeforeT0", abortBeforeT0},
		{"PortHeldOnOneNode", portHeldOnOneNode}, // last: it leaves the VXLAN port at 4791
	})
}

// TestThreeNodeLab: the tests of a 3-node lab with a pod per node.
func TestThreeNodeLab(t *testing.T) {
	const name = "e2e3n"
	up(t, name, "--nodes", "3", "--pods-per-node", "1")
	runSteps(t, name, []labStep{
		{"SilentNodeConverges", silentNodeConverges}, // first: it starts from the MTU the lab was built with
		{"RestartsBeforeT0", restartsBeforeT0},
		{"DrainBlockedByABudget", drainBlockedByABudget}, // last: its workloads and budgets stay
	})
}

// TestTwoNodeNeutronLab: the tests of a 2-node Neutron lab with no pods of
// its own, node-2 a VM on a trunk.
func TestTwoNodeNeutronLab(t *testing.T) {
	const name = "e2ent"
	up(t, name, "--neutron", "--nodes", "2", "--pods-per-node", "0", "--neutron-trunk-node", "node-2")
	runSteps(t, name, []labStep{
		{"PooledPodOnATrunkNode", pooledPodOnATrunkNode},
		{"PooledPodWhosePortNeverComes", pooledPodWhosePortNeverComes}, // its namespace's network does not exist
	})
}

// TestThreeNodeNeutronLab: the tests of a 3-node Neutron lab with a pod of
// the lab's own network per node.
func TestThreeNodeNeutronLab(t *testing.T) {
	const name = "e2en3"
	up(t, name, "--neutron", "--nodes", "3", "--pods-per-node", "1")
	runSteps(t, name, []labStep{
		{"PooledPodsReachEachOtherThroughTheirPorts", pooledPodsReachEachOtherThroughTheirPorts},
		{"PooledPodChurnLeaksNothing", pooledPodChurnLeaksNothing}, // last: it sets the operator's pool settings
	})
}
