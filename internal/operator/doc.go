// Package operator holds netshift's controllers. Each reads the cluster,
// calls the pure core (internal/rollout) and writes what it decided; none of
// them decides anything itself.
package operator
