// Package portpool is the pure core of the Neutron port pools: which pool a
// pod's port comes from, which pooled port is handed out, when a pool is
// refilled and by how much, which idle ports expire, what a released port
// becomes, how Neutron bookkeeping is coalesced, and what a restart recovers.
// The manager (package portpool/manager) reads Neutron and Kubernetes, calls
// these functions, and writes; nothing here does I/O.
package portpool
