package livechange

import (
	"strings"
	"testing"

	"netshift.io/netshift/api/v1alpha1"
)

func TestTheNetworkIsWhatEveryNodeReports(t *testing.T) {
	vx := func(mtu int32, port int32, underlay int32) *v1alpha1.ObservedNetwork {
		return &v1alpha1.ObservedNetwork{MTU: mtu, Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: port, UnderlayMTU: underlay}
	}
	for _, c := range []struct {
		name    string
		reports map[string]*v1alpha1.ObservedNetwork
		says    string
		mtu     int32
		under   int32
	}{
		{"none", map[string]*v1alpha1.ObservedNetwork{}, "no node yet", 0, 0},
		{"waiting", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1500), "b": nil}, "waiting for the network reports of b", 0, 0},
		{"agree", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1500), "b": vx(1450, 4789, 9000)}, "", 1450, 1500},
		{"a node without pods", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1500), "b": vx(0, 4789, 1500)}, "", 1450, 1500},
		{"no MTU anywhere", map[string]*v1alpha1.ObservedNetwork{"a": vx(0, 4789, 1500)}, "no node knows its pod MTU", 0, 0},
		{"no tunnel", map[string]*v1alpha1.ObservedNetwork{"a": {MTU: 1450}}, "no node has a VXLAN or Geneve tunnel", 0, 0},
		{"MTUs differ", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1500), "b": vx(1400, 4789, 1500), "c": vx(1450, 4789, 1500)},
			"disagree on the pod MTU: 1400 on b; 1450 on a, c", 0, 0},
		{"protocols differ", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1500), "b": {MTU: 1450, Encapsulation: v1alpha1.EncapGeneve, TunnelPort: 6081}},
			"disagree on the tunnel protocol: geneve on b; vxlan on a", 0, 0},
		{"ports differ", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1500), "b": vx(1450, 8472, 1500)}, "disagree on the tunnel port: 4789 on a; 8472 on b", 0, 0},
		{"does not fit", map[string]*v1alpha1.ObservedNetwork{"a": vx(1450, 4789, 1400)}, "does not fit node a's underlay MTU 1400", 0, 0},
	} {
		spec, why := FromNodes(c.reports)
		if c.says != "" {
			if spec != nil || !strings.Contains(why, c.says) {
				t.Errorf("%s: %+v %q, want no spec and %q", c.name, spec, why, c.says)
			}
			continue
		}
		if spec == nil || *spec.MTU != c.mtu || spec.Underlay.MTU != c.under || spec.VXLANPort != 4789 || spec.Encapsulation != v1alpha1.EncapVXLAN {
			t.Errorf("%s: %+v %q, want MTU %d over %d", c.name, spec, why, c.mtu, c.under)
		}
	}
	geneve, _ := FromNodes(map[string]*v1alpha1.ObservedNetwork{"a": {MTU: 1400, Encapsulation: v1alpha1.EncapGeneve, TunnelPort: 6082, UnderlayMTU: 1500}})
	if geneve == nil || geneve.GenevePort != 6082 || geneve.VXLANPort != 0 {
		t.Errorf("geneve: %+v", geneve)
	}
}

// TestInitialAppliedIsWhatTheNodesCarry: status.applied starts from the
// nodes' values where they agree, the spec's where none can tell, and does
// not start while they disagree.
func TestInitialAppliedIsWhatTheNodesCarry(t *testing.T) {
	mtu := int32(1400)
	w := FromSpec(v1alpha1.NetshiftNetworkSpec{MTU: &mtu, Encapsulation: v1alpha1.EncapGeneve, GenevePort: 6081})
	seen := func(mtu, port int32, encap v1alpha1.Encapsulation) *v1alpha1.ObservedNetwork {
		return &v1alpha1.ObservedNetwork{MTU: mtu, TunnelPort: port, Encapsulation: encap}
	}
	for _, tc := range []struct {
		name    string
		reports map[string]*v1alpha1.ObservedNetwork
		want    v1alpha1.AppliedNetwork
		why     string
	}{
		{"the nodes' values, not the spec's", map[string]*v1alpha1.ObservedNetwork{"a": seen(1450, 6082, v1alpha1.EncapGeneve), "b": seen(1450, 6082, v1alpha1.EncapGeneve)},
			v1alpha1.AppliedNetwork{MTU: 1450, VXLANPort: 4789, GenevePort: 6082}, ""},
		{"no report: the spec's", map[string]*v1alpha1.ObservedNetwork{"a": nil}, v1alpha1.AppliedNetwork{MTU: 1400, VXLANPort: 4789, GenevePort: 6081}, ""},
		{"no pod, no tunnel: the spec's", map[string]*v1alpha1.ObservedNetwork{"a": {}}, v1alpha1.AppliedNetwork{MTU: 1400, VXLANPort: 4789, GenevePort: 6081}, ""},
		{"one node's word is taken while the other is silent", map[string]*v1alpha1.ObservedNetwork{"a": seen(1500, 0, ""), "b": nil},
			v1alpha1.AppliedNetwork{MTU: 1500, VXLANPort: 4789, GenevePort: 6081}, ""},
		{"a VXLAN node sets the VXLAN port", map[string]*v1alpha1.ObservedNetwork{"a": seen(1450, 8472, v1alpha1.EncapVXLAN)},
			v1alpha1.AppliedNetwork{MTU: 1450, VXLANPort: 8472, GenevePort: 6081}, ""},
		{"MTUs differ", map[string]*v1alpha1.ObservedNetwork{"a": seen(1450, 6081, v1alpha1.EncapGeneve), "b": seen(1400, 6081, v1alpha1.EncapGeneve)},
			v1alpha1.AppliedNetwork{}, "the nodes disagree on the pod MTU: 1400 on b; 1450 on a"},
		{"ports differ", map[string]*v1alpha1.ObservedNetwork{"a": seen(1450, 6081, v1alpha1.EncapGeneve), "b": seen(1450, 6090, v1alpha1.EncapGeneve)},
			v1alpha1.AppliedNetwork{}, "the nodes disagree on the Geneve port: 6081 on a; 6090 on b"},
	} {
		got, why, ok := InitialApplied(w, tc.reports)
		if why != tc.why || ok != (tc.why == "") {
			t.Errorf("%s: why %q ok %v, want %q", tc.name, why, ok, tc.why)
			continue
		}
		if ok && got != tc.want {
			t.Errorf("%s: applied %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
