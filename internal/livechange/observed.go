package livechange

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"netshift.io/netshift/api/v1alpha1"
)

// FromNodes is the NetshiftNetwork spec the nodes' reports describe, or why
// there is none yet: a node that has not reported, no node that knows the
// pod MTU or has a tunnel, or nodes that disagree (each value is named with
// its nodes: netshift never picks one of them).
func FromNodes(reports map[string]*v1alpha1.ObservedNetwork) (*v1alpha1.NetshiftNetworkSpec, string) {
	var waiting []string
	mtus, ports, encaps := map[int32][]string{}, map[int32][]string{}, map[v1alpha1.Encapsulation][]string{}
	underlay, underlayNode := int32(0), ""
	for _, n := range sortedNodes(reports) {
		o := reports[n]
		if o == nil {
			waiting = append(waiting, n)
			continue
		}
		if o.MTU > 0 {
			mtus[o.MTU] = append(mtus[o.MTU], n)
		}
		if o.Encapsulation != "" {
			encaps[o.Encapsulation] = append(encaps[o.Encapsulation], n)
			ports[o.TunnelPort] = append(ports[o.TunnelPort], n)
		}
		if o.UnderlayMTU > 0 && (underlay == 0 || o.UnderlayMTU < underlay) {
			underlay, underlayNode = o.UnderlayMTU, n
		}
	}
	switch {
	case len(reports) == 0:
		return nil, "no node yet"
	case len(waiting) > 0:
		return nil, "waiting for the network reports of " + clipNames(waiting)
	case len(mtus) == 0:
		return nil, "no node knows its pod MTU yet (no pod with a network of its own)"
	case len(encaps) == 0:
		return nil, "no node has a VXLAN or Geneve tunnel yet"
	case len(mtus) > 1:
		return nil, "the nodes disagree on the pod MTU: " + byValue(mtus)
	case len(encaps) > 1:
		return nil, "the nodes disagree on the tunnel protocol: " + byValue(encaps)
	case len(ports) > 1:
		return nil, "the nodes disagree on the tunnel port: " + byValue(ports)
	}
	spec := &v1alpha1.NetshiftNetworkSpec{Encapsulation: onlyKey(encaps)}
	mtu, port := onlyKey(mtus), onlyKey(ports)
	spec.MTU = &mtu
	if spec.Encapsulation == v1alpha1.EncapGeneve {
		spec.GenevePort = port
	} else {
		spec.VXLANPort = port
	}
	if underlay == 0 {
		underlay = 1500
	}
	if need := mtu + spec.Encapsulation.Overhead(); need > underlay {
		return nil, fmt.Sprintf("the pods' MTU %d plus %d bytes of %s overhead does not fit node %s's underlay MTU %d",
			mtu, spec.Encapsulation.Overhead(), spec.Encapsulation, underlayNode, underlay)
	}
	spec.Underlay.MTU = underlay
	return spec, ""
}

func onlyKey[K comparable](m map[K][]string) K {
	for k := range m {
		return k
	}
	var zero K
	return zero
}

// byValue names each value with its nodes: "1400 on c; 1450 on a, b".
func byValue[K cmp.Ordered](m map[K][]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%v on %s", k, clipNames(m[k])))
	}
	return strings.Join(parts, "; ")
}

// clipNames lists at most five names, and how many more.
func clipNames(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

// InitialApplied is what status.applied starts from when a NetshiftNetwork
// is first seen: the value the reporting nodes carry, where they agree, and
// the spec's where no node can tell (no pod yet, no tunnel). A user's spec
// says what they want, not what the nodes have: a spec that differs from the
// nodes starts a live change. Nodes that disagree are no start (ok false):
// why names them, and status.applied waits until they agree.
func InitialApplied(w Wanted, reports map[string]*v1alpha1.ObservedNetwork) (applied v1alpha1.AppliedNetwork, why string, ok bool) {
	applied = v1alpha1.AppliedNetwork{MTU: w.MTU, VXLANPort: w.VXLANPort, GenevePort: w.GenevePort}
	mtus := map[int32][]string{}
	ports := map[v1alpha1.Encapsulation]map[int32][]string{v1alpha1.EncapVXLAN: {}, v1alpha1.EncapGeneve: {}}
	for _, n := range sortedNodes(reports) {
		o := reports[n]
		if o == nil {
			continue
		}
		if o.MTU > 0 {
			mtus[o.MTU] = append(mtus[o.MTU], n)
		}
		if byPort, known := ports[o.Encapsulation]; known && o.TunnelPort > 0 {
			byPort[o.TunnelPort] = append(byPort[o.TunnelPort], n)
		}
	}
	switch {
	case len(mtus) > 1:
		return applied, "the nodes disagree on the pod MTU: " + byValue(mtus), false
	case len(ports[v1alpha1.EncapVXLAN]) > 1:
		return applied, "the nodes disagree on the VXLAN port: " + byValue(ports[v1alpha1.EncapVXLAN]), false
	case len(ports[v1alpha1.EncapGeneve]) > 1:
		return applied, "the nodes disagree on the Geneve port: " + byValue(ports[v1alpha1.EncapGeneve]), false
	}
	if len(mtus) == 1 {
		applied.MTU = onlyKey(mtus)
	}
	if len(ports[v1alpha1.EncapVXLAN]) == 1 {
		applied.VXLANPort = onlyKey(ports[v1alpha1.EncapVXLAN])
	}
	if len(ports[v1alpha1.EncapGeneve]) == 1 {
		applied.GenevePort = onlyKey(ports[v1alpha1.EncapGeneve])
	}
	return applied, "", true
}
