package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// buildNetwork creates the underlay, every node (its namespace and its OVS),
// the machine's link into the underlay, and the tunnels or OVN.
func (s *State) buildNetwork(ctx context.Context, sh *shell, progress func(string, ...any)) error {
	ul := s.Topology.UnderlayNetns
	if err := s.addNetns(ctx, sh, ul); err != nil {
		return err
	}
	if err := sh.ip(ctx, "-n", ul, "link", "add", "ulbr", "mtu", fmt.Sprint(s.Options.UnderlayMTU), "type", "bridge"); err != nil {
		return err
	}
	if err := sh.ip(ctx, "-n", ul, "link", "set", "ulbr", "up"); err != nil {
		return err
	}
	for _, n := range s.Topology.Nodes {
		progress("node %s: namespace %s, underlay %s, ovsdb-server and ovs-vswitchd", n.Name, n.Netns, n.UnderlayIP)
		if err := s.buildNode(ctx, sh, n); err != nil {
			return err
		}
	}
	if err := s.joinUnderlay(ctx, sh); err != nil {
		return err
	}
	if s.Options.OVN {
		if err := s.buildOVN(ctx, sh, progress); err != nil {
			return err
		}
	} else if !s.runsOVNKubernetes() { // ovn-controller makes OVN-Kubernetes' tunnels
		for _, n := range s.Topology.Nodes {
			if err := s.addTunnels(ctx, sh, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Down removes everything the lab named name created, and nothing else.
func Down(ctx context.Context, name string, out io.Writer) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	return s.teardown(ctx, out)
}

// teardown stops the lab's processes (only those it recorded, and only while
// they are still the process it started), deletes its namespaces and its state
// directory. It goes on past errors and reports them all.
func (s *State) teardown(ctx context.Context, out io.Writer) error {
	var errs []error
	// What the lab's other processes (the supervisor) recorded since this one read the state.
	if err := s.reload(); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if s.Probe != nil {
		s.Probe.Stop(5 * time.Second)
	}
	// The supervisor first: it stops the API server, the operator and the agents it runs.
	procs := slices.Clone(s.Processes)
	slices.Reverse(procs)
	for _, p := range procs {
		if p.Role == "supervisor" {
			p.Stop(15 * time.Second)
		}
	}
	// Real nodes next, in the order that leaves nothing behind: kubelets, their pods' processes,
	// the runtime, the mount namespace holders, the nodes' cgroups.
	if err := s.stopKubeNodes(); err != nil {
		errs = append(errs, err)
	}
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return err
	}
	defer sh.close()
	for _, p := range procs {
		if p.Role == neutronRole {
			if err := stopGroup(p.Pid, 10*time.Second); err != nil {
				errs = append(errs, fmt.Errorf("neutron-server: %w", err))
			}
			continue
		}
		if node, ok := strings.CutPrefix(p.Role, "ovs-vswitchd:"); ok && s.runsOVNKubernetes() {
			// Its monitor may have started another since it was recorded: that one exits too.
			_, _ = sh.run(ctx, s.ovsEnv(node), "ovs-appctl", "-t", s.vswitchdControl(node), "exit", "--cleanup")
		}
		if !p.Alive() {
			continue
		}
		grace := 5 * time.Second
		switch {
		case p.Role == neutronDatabaseRole:
			grace = 30 * time.Second // InnoDB's clean shutdown
		case strings.HasPrefix(p.Role, "ovs-vswitchd:"):
			node := strings.TrimPrefix(p.Role, "ovs-vswitchd:")
			_, _ = sh.run(ctx, s.ovsEnv(node), "ovs-appctl", "-t", s.vswitchdControl(node), "exit", "--cleanup")
		case strings.HasPrefix(p.Role, "ovsdb-server:"):
			node := strings.TrimPrefix(p.Role, "ovsdb-server:")
			_, _ = sh.run(ctx, s.ovsEnv(node), "ovs-appctl", "-t", s.Path("nodes", node, "ovsdb-server.ctl"), "exit")
		}
		p.Stop(grace)
		if p.Alive() {
			errs = append(errs, fmt.Errorf("process %s (pid %d) did not stop", p.Role, p.Pid))
		}
	}
	existing := map[string]bool{}
	if list, err := sh.run(ctx, nil, "ip", "netns", "list"); err == nil {
		for _, line := range strings.Split(list, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				existing[f[0]] = true
			}
		}
	}
	// The machine's link into the underlay goes now, not with its namespace's deferred cleanup:
	// the next lab checks the machine's underlay address is free.
	if _, err := os.Stat(filepath.Join("/sys/class/net", s.hostLinkName())); err == nil {
		if err := sh.ip(ctx, "link", "del", s.hostLinkName()); err != nil {
			errs = append(errs, err)
		}
	}
	ns := slices.Clone(s.Netns)
	slices.Reverse(ns)
	for _, n := range ns {
		if !existing[n] {
			continue
		}
		if err := sh.ip(ctx, "netns", "del", n); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lab %s: not everything was removed (state kept in %s): %w", s.Options.Name, s.dir, errors.Join(errs...))
	}
	sh.close()
	if err := os.RemoveAll(s.dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "lab %s: removed %d processes, %d namespaces and %s\n", s.Options.Name, len(procs), len(ns), s.dir)
	return nil
}
