// Package standin is the lab's stand-in for ovnkube, the OVN network
// plugin's pods, in a lab whose OVN topology the lab builds itself:
//
//   - the DaemonSet ovnkube-node: its pod on each node reads the node's zone
//     label (k8s.ovn.org/zone-name) when it starts, has the node moved into
//     that zone (the lab's ordered move, run on the machine where the node's
//     OVN daemons live: the new zone prepared first, ovn-controller repointed,
//     the switch and router port moved, the Chassis_Private row awaited, the
//     old chassis deleted), then writes the node's zone annotation and reports
//     ready. A node with no label is left in the layout it has (the legacy
//     central one). Its exit changes nothing on the node: ovn-controller and
//     the flows stay.
//   - the Deployment ovnkube-central: its pod starts the central zone (its
//     NB, SB, ovn-northd and ovn-ic) when it starts, and retires it when it is
//     stopped with no node left in it (scaled to 0).
//
// Both pods have the lab run the work through a call: a request file in the
// node's lab directory, which the lab answers by running its own command on
// the machine. Only a node's own zone move and the central zone's start and
// retirement are answered.
//
// netshift's operator acts on these objects as on ovnkube's: a zone label, a
// pod deleted, a Deployment scaled. A lab given real OVN-Kubernetes binaries
// runs ovnkube itself instead (package ovnk).
package standin
