package livechange

import (
	"fmt"
	"sort"
	"strings"

	"netshift.io/netshift/api/v1alpha1"
)

// FromNodes is the NetshiftNetwork spec the nodes' reports describe, or why
// there is none yet: a node that has not reported, no node that knows the
// pod MTU or has a tunnel, or nodes that disagree (each value is named with
// its nodes: netshift never picks one of them).
func FromNodes(reports map[string]*v1alpha1.ObservedNetwork) (*v1alpha1.NetshiftNetworkSpec, string) {
	var waiting []string
	mtus, encaps, ports := map[string][]string{}, map[string][]string{}, map[string][]string{}
	underlay, underlayNode := int32(0), ""
	for _, n := range sortedNodes(reports) {
		o := reports[n]
		if o == nil {
			waiting = append(waiting, n)
			continue
		}
		if o.MTU > 0 {
			mtus[fmt.Sprint(o.MTU)] = append(mtus[fmt.Sprint(o.MTU)], n)
		}
		if o.Encapsulation != "" {
			encaps[string(o.Encapsulation)] = append(encaps[string(o.Encapsulation)], n)
			ports[fmt.Sprint(o.TunnelPort)] = append(ports[fmt.Sprint(o.TunnelPort)], n)
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
	spec := &v1alpha1.NetshiftNetworkSpec{Encapsulation: v1alpha1.Encapsulation(onlyKey(encaps))}
	var mtu, port int32
	fmt.Sscan(onlyKey(mtus), &mtu)
	fmt.Sscan(onlyKey(ports), &port)
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

func onlyKey(m map[string][]string) string {
	for k := range m {
		return k
	}
	return ""
}

// byValue names each value with its nodes: "1450 on a, b; 1400 on c".
func byValue(m map[string][]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" on "+clipNames(m[k]))
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
