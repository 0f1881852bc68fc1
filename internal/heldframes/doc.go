// Package heldframes gives a migrated VM the frames its target's port bridge
// held back while the VM was not running there yet.
//
// A migration's target port is activated ahead of the VM, so OVN sends it
// every frame of the migration; the port bridge keeps them from the incoming
// VM's tap until the VM itself sends a frame (ovs.HoldForVM), else the tap
// would queue seconds of stale frames for the resumed guest. The VM's first
// frame comes a few milliseconds after it resumes, and a frame that arrived
// in between, or while the VM was stopped, reached neither host. So the held
// frames go to the bridge's own port, where the agent keeps the newest
// (Keeper, pure); when the VM's first frame shows there too, the agent gives
// the VM what arrived in the last Window, then everything still coming that
// way until the datapath has dropped its cached hold (Hold, the socket).
package heldframes
