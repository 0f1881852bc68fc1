// Package cni is netshift's CNI plugin, chained after the cluster's main
// plugin: it gives each new pod the MTU in force on its node, read from the
// node's applied network configuration (the file a live change rewrites as its
// last step), under a shared lock on that configuration so that a live
// change's pod step, which takes it exclusively, never misses a pod.
//
// It follows the CNI specification (1.0 and 1.1): ADD sets the MTU of the
// interfaces the previous plugin created (the pod's, and the node end of its
// veth) and passes the previous result on; DEL harms nothing; CHECK verifies
// the pod's interfaces carry the node's MTU; VERSION is answered by skel.
package cni
