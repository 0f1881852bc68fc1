// Package vm is the lab's virtual machine and what runs it: the hypervisors
// a migration goes through (Hypervisor: define, start, start incoming,
// migrate until resumed, destroy), with two behind it:
//
//   - QEMU: a real guest (package guest's image: Debian's kernel, busybox and
//     the guest's own answering program) under TCG in the node's network
//     namespace, its tap created by the lab as libvirt creates it, migrated by
//     QMP over the lab's underlay; QEMU chooses the downtime and sends the
//     resumed guest's announcements itself.
//   - Netns: a network namespace whose traffic thread is its CPU, paused and
//     moved by the lab itself; fast, and its interface appears on the target
//     only at the resume.
//
// and the measured exchange between the VM and its peer (Traffic), counted
// by sequence number afterwards. The lab's migration (lab.Migrate) creates
// the pods, waits for netshift, and reads OVN; it does not know which
// hypervisor runs the VM.
package vm
