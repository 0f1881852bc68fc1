// Package kubenode makes a lab node a real Kubernetes node: a private mount
// namespace, inside the node's network namespace, in which the node's own
// containerd (Debian's, with runc) and its own kubelet run, with every path
// that nodes would otherwise share (the kubelet's and containerd's state, the
// CNI configuration, binaries and result cache, pod logs, the OVS socket,
// netshift's node files) bound to a directory of the node's own, and the
// kernel settings the kubelet writes bound to files so the machine's stay
// untouched.
//
// The package starts and stops those processes; the lab records them in its
// state so that `lab down` stops them even after a crash.
package kubenode
