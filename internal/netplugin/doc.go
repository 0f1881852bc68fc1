// Package netplugin is the seam between netshift and the cluster's network
// plugin. What differs from one plugin to the next sits behind its two
// interfaces: Node, on each node (which devices and database rows a live
// change touches, in which steps, and how the node reads back what it
// carries), and Cluster, in the operator (which steps a change has, which of
// the plugin's objects hold the MTU and ports, how a node moves between
// zones). The agent and the operator call them; nothing outside a driver
// knows which plugin runs. The pure core (package livechange) keeps the
// steps' order and timing.
package netplugin
