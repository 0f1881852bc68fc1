package lab

import (
	"context"
	"fmt"
	"time"

	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/lab/ovnic"
)

// The lab's OVN interconnect is package ovnic; what it needs of the lab is
// here.

const globalZone = ovnic.GlobalZone

// Zone layouts of `lab up --zones`.
const (
	ZonesLegacy = "legacy"
	ZonesSingle = "single"
	ZonesMulti  = "multi"
)

// Interconnect is the lab's OVN interconnect: its zones, the moves of its
// nodes between them, and its central zone.
func (s *State) Interconnect() *ovnic.Interconnect {
	nodes := make([]ovnic.Node, 0, len(s.Topology.Nodes))
	for _, n := range s.Topology.Nodes {
		nodes = append(nodes, ovnic.Node{Name: n.Name, Index: n.Index, Dir: s.nodeDir(n.Name)})
	}
	return &ovnic.Interconnect{Lab: interconnectLab{s}, Name: s.Options.Name, Dir: s.Dir(), OVNDir: s.ovnDir(), Nodes: nodes,
		CentralRemotes: map[string][]string{"nb": s.centralRemotes("nb"), "sb": s.centralRemotes("sb")}}
}

// centralUp says whether the central zone runs.
func (s *State) centralUp() error { return s.Interconnect().CentralUp() }

// interconnectLab is the lab as its interconnect uses it.
type interconnectLab struct{ s *State }

func (l interconnectLab) Commands() (ovnic.Commands, error) {
	sh, err := newShell(l.s.Path("commands.log"))
	if err != nil {
		return nil, err
	}
	return shellCommands{sh, l.s}, nil
}

func (l interconnectLab) Daemons() map[string]bool {
	_ = l.s.reload()
	live := map[string]bool{}
	for _, p := range l.s.Processes {
		if p.Alive() {
			live[p.Role] = true
		}
	}
	return live
}

func (l interconnectLab) StopDaemons(roles ...string)     { l.s.stopRoles(roles...) }
func (l interconnectLab) SetNodeNB(node, nb string) error { return l.s.setNodeNB(node, nb) }
func (l interconnectLab) CheckFrom(ctx context.Context, node string) error {
	return l.s.checkFrom(ctx, node)
}

// shellCommands run the interconnect's commands through one of the lab's shells.
type shellCommands struct {
	*shell
	s *State
}

func (c shellCommands) Vsctl(ctx context.Context, node string, args ...string) (string, error) {
	return c.s.vsctl(ctx, c.shell, node, args...)
}

func (c shellCommands) StartDaemon(ctx context.Context, role string, env []string, pidfile, bin string, args ...string) error {
	return c.s.startDaemon(ctx, c.shell, role, "", env, pidfile, bin, args...)
}

func (c shellCommands) Close() { c.close() }

// checkFrom checks, over TCP, that the node's first pod reaches a pod on
// every other node: traffic passes between its zone and the others.
func (s *State) checkFrom(ctx context.Context, node string) error {
	if s.Kubeconfig == "" {
		return nil // being built: no pods yet
	}
	pods, err := s.Pods(ctx)
	if err != nil {
		return fmt.Errorf("node %s: the lab's pods: %w", node, err)
	}
	var from *PodSpec
	for _, p := range pods {
		if p.Node == node && p.Netns != "" {
			from = &p
			break
		}
	}
	if from == nil {
		return nil
	}
	seen := map[string]bool{node: true}
	deadline := time.Now().Add(15 * time.Second)
	for _, to := range pods {
		if seen[to.Node] || to.Netns == "" {
			continue
		}
		seen[to.Node] = true
		for {
			err := TCPCheck(*from, to, 500*time.Millisecond)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: pod %s does not reach pod %s on %s: %w", node, from.Name, to.Name, to.Node, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// UpgradeZones turns on the operator's zone controller in a lab built
// without it (--zones legacy), as installing a zone-aware netshift would
// (config/lab-ovn-zones applied over config/lab-ovn): the operator rolls out
// with --zone-migration and, with no ConfigMap, moves the cluster to
// multizone through single zone.
func UpgradeZones(name string) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	overlay := "lab-ovn-zones"
	switch {
	case s.runsOVNKubernetes():
		overlay = "lab-ovn-kubernetes-zones"
	case !s.Options.OVN:
		return fmt.Errorf("lab %s: zones need an OVN lab (--ovn or --ovn-kubernetes)", name)
	}
	// Upgrading the installed netshift to one with the zone controller, as a user would.
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.applyOverlay(ctx, assets, s.Kubeconfig, overlay)
}
