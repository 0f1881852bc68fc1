package netplugin

import (
	"context"

	"netshift.io/netshift/api/v1alpha1"
)

// Node is a network plugin's driver on one node: the agent hands it the
// steps the plugin's Cluster driver named, and nothing else.
//
// Every step is idempotent (a restarted agent may run it again) and finds
// what it changes on the node when it runs: pods from the node's container
// runtime, devices from the node's kernel and switch, never from the API,
// which tenants can write to.
type Node interface {
	// Check says, touching nothing, whether the node can take the plan's change.
	Check(ctx context.Context, plan *v1alpha1.LiveChangePlan) Findings
	// Arm prepares a step before its time (namespaces entered, a transaction
	// built), so that at its time it only sends. An unknown step is an error.
	Arm(ctx context.Context, plan *v1alpha1.LiveChangePlan, step v1alpha1.ScheduledStep) (Armed, error)
	// Carries reads back that the node carries network: its pods' and the
	// plugin's devices' MTU, its tunnels' port (after a reboot, say).
	Carries(ctx context.Context, network v1alpha1.NodeNetworkConfig) error
	// Align gives every pod whose interfaces differ from mtu that MTU, the
	// path to it first: pods set up with the old value while a change ran.
	Align(ctx context.Context, mtu int) (Outcome, error)
	// Observe fills in what the node carries now: the pods' MTU when the node
	// has no network configuration of netshift's, the tunnels' protocol and port.
	Observe(ctx context.Context, o *v1alpha1.ObservedNetwork) error
}

// Findings are a node's answer to a change's preconditions.
type Findings struct {
	// Problems stop the change before anything is touched.
	Problems []string
	// Warnings do not.
	Warnings []string
	// WouldChange is what the steps would change, for a person to read (a dry run).
	WouldChange []string
}

// Add appends other's findings to f.
func (f *Findings) Add(other Findings) {
	f.Problems = append(f.Problems, other.Problems...)
	f.Warnings = append(f.Warnings, other.Warnings...)
	f.WouldChange = append(f.WouldChange, other.WouldChange...)
}

// Armed is a step made ready before its time: Fire runs it, Release frees
// what was opened for it, whether it ran or not.
type Armed struct {
	Fire    func(context.Context) (Outcome, error)
	Release func()
}

// Whole is a step that needs nothing prepared: it runs whole at its time.
func Whole(run func(context.Context) (Outcome, error)) Armed {
	return Armed{Fire: run, Release: func() {}}
}
