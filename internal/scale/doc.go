// Package scale measures netshift on a cluster of simulated nodes: the real
// kube-apiserver, etcd, kube-controller-manager and kube-scheduler, kwok
// keeping the simulated Nodes and their pods alive, the real operator as a
// process of its own, and one real agent per node, all in this process, each
// with its own client and watches, over a simulated data plane (package
// simnode). It runs one scenario (a live MTU change, a tunnel-port change, a
// drain of node pools) and reports what it cost: time, API requests per node,
// the operator's and the API server's CPU and memory.
package scale
