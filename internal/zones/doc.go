// Package zones decides how a cluster moves between OVN interconnect layouts:
// one central zone for every node (singlezone), one zone per node joined by a
// transit switch (multizone), and the legacy central layout with no zones.
// The desired layout comes from the ConfigMap ovn-interconnect-configuration
// (zone-mode, definitive); the current one from every node's
// k8s.ovn.org/zone-name annotation, which a node's network plugin pod writes
// once its ovn-controller is bound in that zone. A node moves the way the
// plugin moves it: its zone label set and its plugin pod restarted; the
// central side is the plugin's Deployment, scaled. Every function here is
// pure: the operator's zone controller reads the cluster, calls Decide and
// NextPluginStep, and writes.
package zones
