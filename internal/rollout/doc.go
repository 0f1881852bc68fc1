// Package rollout is netshift's pure decision core for parallel node
// configuration: which pool owns each node, how many nodes each pool may
// configure at once, which nodes may start draining now, and the waves a
// change would take. Nothing here does I/O; the operator's controllers and the
// `netshift plan` command read the cluster, call these functions and write
// the result, so both always agree.
package rollout
