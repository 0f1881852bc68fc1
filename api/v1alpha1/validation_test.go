package v1alpha1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/testenv"
)

var (
	env        *testenv.Env
	envMissing error
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, &envMissing)) }

func pool(name string, mutate func(*v1alpha1.NetshiftNodePoolSpec)) *v1alpha1.NetshiftNodePool {
	np := &v1alpha1.NetshiftNodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mutate != nil {
		mutate(&np.Spec)
	}
	return np
}

func expr(op corev1.NodeSelectorOperator, values ...string) []v1alpha1.NodeSelectorTerm {
	return []v1alpha1.NodeSelectorTerm{{MatchExpressions: []v1alpha1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: values}}}}
}

// netshiftNetwork is a valid NetshiftNetwork (pod MTU 1450) with mutate applied.
func netshiftNetwork(mutate func(*v1alpha1.NetshiftNetworkSpec)) *v1alpha1.NetshiftNetwork {
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1450)}}
	mutate(&cn.Spec)
	return cn
}

// drainTimeout is a NetshiftNetwork whose drain timeout is written as given,
// as kubectl would send it (a metav1.Duration could not carry "ten minutes").
// downNodeGrace is a NetshiftNetwork whose spec.downNodeGrace is grace, as written.
func downNodeGrace(grace string) client.Object {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "NetshiftNetwork",
		"metadata": map[string]any{"name": v1alpha1.NetshiftNetworkName},
		"spec":     map[string]any{"mtu": int64(1450), "downNodeGrace": grace},
	}}
}

func drainTimeout(timeout string) client.Object {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "NetshiftNetwork",
		"metadata": map[string]any{"name": v1alpha1.NetshiftNetworkName},
		"spec":     map[string]any{"mtu": int64(1450), "drain": map[string]any{"timeout": timeout}},
	}}
}

// TestAPIServerRefusesBadInput: the API server refuses each bad object at
// once, with a message that names the field, and stores nothing.
func TestAPIServerRefusesBadInput(t *testing.T) {
	testenv.Require(t, envMissing)
	cases := []struct {
		name string
		obj  client.Object
		want []string // all must appear in the error
	}{
		{"priority 100", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.Priority = ptr.To[int32](100) }),
			[]string{"spec.priority", "99"}},
		{"priority -1", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.Priority = ptr.To[int32](-1) }),
			[]string{"spec.priority", "0"}},
		{"maxParallel -1", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.MaxParallel = ptr.To(intstr.FromInt32(-1)) }),
			[]string{"spec.maxParallel", `"1%" to "100%"`}},
		{"maxParallel 150%", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.MaxParallel = ptr.To(intstr.FromString("150%")) }),
			[]string{"spec.maxParallel", `"1%" to "100%"`}},
		{"maxParallel 0%", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.MaxParallel = ptr.To(intstr.FromString("0%")) }),
			[]string{"spec.maxParallel"}},
		{"invalid selector operator", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.NodeSelectorTerms = expr("Near", "a") }),
			[]string{"spec.nodeSelectorTerms[0].matchExpressions[0].operator", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}},
		{"In without values", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.NodeSelectorTerms = expr(corev1.NodeSelectorOpIn) }),
			[]string{"spec.nodeSelectorTerms[0].matchExpressions[0]", "non-empty"}},
		{"Gt with a non-integer", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.NodeSelectorTerms = expr(corev1.NodeSelectorOpGt, "ten") }),
			[]string{"spec.nodeSelectorTerms[0].matchExpressions[0]", "single integer"}},
		{"matchFields on a label", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) {
			s.NodeSelectorTerms = []v1alpha1.NodeSelectorTerm{{MatchFields: []v1alpha1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}
		}), []string{"spec.nodeSelectorTerms[0].matchFields", "metadata.name"}},
		{"maxParallel 3000000000", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.MaxParallel = ptr.To(intstr.FromInt32(10001)) }),
			[]string{"spec.maxParallel", "0 to 10000"}},
		{"maxParallel +50%", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.MaxParallel = ptr.To(intstr.FromString("+50%")) }),
			[]string{"spec.maxParallel", `"1%" to "100%"`}},
		{"selector value with a space", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) { s.NodeSelectorTerms = expr(corev1.NodeSelectorOpIn, "a b") }),
			[]string{"spec.nodeSelectorTerms[0].matchExpressions[0].values[0]", "should match"}},
		{"Gt beyond int64", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) {
			s.NodeSelectorTerms = expr(corev1.NodeSelectorOpGt, "99999999999999999999")
		}),
			[]string{"spec.nodeSelectorTerms[0].matchExpressions[0]", "at most 18 digits"}},
		{"selector key with a space", pool("p", func(s *v1alpha1.NetshiftNodePoolSpec) {
			s.NodeSelectorTerms = []v1alpha1.NodeSelectorTerm{{MatchExpressions: []v1alpha1.NodeSelectorRequirement{{Key: "my zone", Operator: corev1.NodeSelectorOpExists}}}}
		}), []string{"spec.nodeSelectorTerms[0].matchExpressions[0].key", "should match"}},
		{"reserved pool name", pool("default", nil), []string{"metadata.name", "reserved"}},
		{"NetshiftNetwork without mtu", &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, []string{"spec.mtu", "Required"}},
		{"drain timeout in words", drainTimeout("ten minutes"),
			[]string{"spec.drain.timeout", "should match"}},
		{"drain timeout negative", drainTimeout("-5m"),
			[]string{"spec.drain.timeout", "should match"}},
		{"drain timeout 0s", drainTimeout("0s"),
			[]string{"spec.drain.timeout", "from 1s to 168h"}},
		{"down node grace of two days", downNodeGrace("48h"), []string{"spec.downNodeGrace", "from 0s to 24h"}},
		{"down node grace in words", downNodeGrace("a minute"), []string{"spec.downNodeGrace", "should match"}},
		{"second NetshiftNetwork", &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1450)}},
			[]string{"metadata.name", `"cluster"`}},
		{"unknown onTimeout", netshiftNetwork(func(s *v1alpha1.NetshiftNetworkSpec) { s.Drain.OnTimeout = "Panic" }), []string{"spec.drain.onTimeout", "Wait", "Fail"}},
		{"unknown onFailure action", netshiftNetwork(func(s *v1alpha1.NetshiftNetworkSpec) { s.OnFailure.Action = "Reinstall" }),
			[]string{"spec.onFailure.action", "Rollback", "Reboot", "None"}},
		{"maxFailedNodes -1", netshiftNetwork(func(s *v1alpha1.NetshiftNetworkSpec) { s.OnFailure.MaxFailedNodes = ptr.To(intstr.FromInt32(-1)) }),
			[]string{"spec.onFailure.maxFailedNodes", "0 to 10000", `"0%" to "100%"`}},
		{"maxFailedNodes 10001", netshiftNetwork(func(s *v1alpha1.NetshiftNetworkSpec) { s.OnFailure.MaxFailedNodes = ptr.To(intstr.FromInt32(10001)) }),
			[]string{"spec.onFailure.maxFailedNodes", "0 to 10000"}},
		{"maxFailedNodes 101%", netshiftNetwork(func(s *v1alpha1.NetshiftNetworkSpec) { s.OnFailure.MaxFailedNodes = ptr.To(intstr.FromString("101%")) }),
			[]string{"spec.onFailure.maxFailedNodes", `"0%" to "100%"`}},
		{"maxFailedNodes in words", netshiftNetwork(func(s *v1alpha1.NetshiftNetworkSpec) { s.OnFailure.MaxFailedNodes = ptr.To(intstr.FromString("a few")) }),
			[]string{"spec.onFailure.maxFailedNodes", `"0%" to "100%"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := env.Client.Create(t.Context(), c.obj)
			if err == nil {
				_ = env.Client.Delete(t.Context(), c.obj)
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	var pools v1alpha1.NetshiftNodePoolList
	if err := env.Client.List(t.Context(), &pools); err != nil || len(pools.Items) != 0 {
		t.Fatalf("refused objects must store nothing: %d pools, %v", len(pools.Items), err)
	}
}

// TestDefaults: a pool that sets nothing gets priority 99 and maxParallel 1;
// percentages and 0 are accepted.
func TestDefaults(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	np := pool("plain", nil)
	if err := env.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, np) }()
	if *np.Spec.Priority != 99 || np.Spec.MaxParallel.String() != "1" {
		t.Fatalf("defaults: priority %d maxParallel %s, want 99 and 1", *np.Spec.Priority, np.Spec.MaxParallel.String())
	}
	for _, mp := range []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("100%"), intstr.FromString("1%"), intstr.FromInt32(40)} {
		ok := pool("ok", func(s *v1alpha1.NetshiftNodePoolSpec) {
			s.MaxParallel = &mp
			s.NodeSelectorTerms = expr(corev1.NodeSelectorOpExists)
		})
		if err := env.Client.Create(ctx, ok); err != nil {
			t.Errorf("maxParallel %s refused: %v", mp.String(), err)
			continue
		}
		_ = env.Client.Delete(ctx, ok)
	}
	cn := netshiftNetwork(func(*v1alpha1.NetshiftNetworkSpec) {})
	if err := env.Client.Create(ctx, cn); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, cn) }()
	if f := cn.Spec.OnFailure; f.Action != v1alpha1.FailureRollback || f.MaxFailedNodes == nil || f.MaxFailedNodes.String() != "0" || f.RebootControlPlane {
		t.Fatalf("onFailure defaults = %+v, want action Rollback, maxFailedNodes 0, no control-plane reboot", f)
	}
	if cn.Spec.Drain.Timeout == nil || cn.Spec.Drain.Timeout.Duration.String() != "10m0s" || cn.Spec.Drain.OnTimeout != v1alpha1.DrainTimeoutWait {
		t.Fatalf("drain defaults = %+v, want timeout 10m and onTimeout Wait", cn.Spec.Drain)
	}
	if cn.Spec.DownNodeGrace == nil || cn.Spec.DownNodeGrace.Duration.String() != "1m0s" {
		t.Fatalf("downNodeGrace default = %v, want 1m", cn.Spec.DownNodeGrace)
	}
}

// TestKubectlExplainReadsWell: every field the user sets is documented.
func TestKubectlExplainReadsWell(t *testing.T) {
	testenv.Require(t, envMissing)
	kubectl := filepath.Join(env.AssetsDir, "kubectl")
	for field, want := range map[string]string{
		"netshiftnodepools.spec.maxParallel":           "percentage",
		"netshiftnodepools.spec.priority":              "lower number wins",
		"netshiftnodepools.spec.nodeSelectorTerms":     "Empty selects every node",
		"netshiftnodestates.status.drainStatus":        "Written by the operator alone",
		"netshiftnodestates.status.drainRequest":       "Written by the agent",
		"netshiftnetworks.spec.drain.onTimeout":        "keep waiting and report",
		"netshiftnetworks.spec.drain.disabled":         "pool limits still apply",
		"netshiftnodestates.spec.operation.id":         "identifies the operation",
		"netshiftnodepools.status.draining":            "slot",
		"netshiftnodestates.status.cordonedByNetshift": "never uncordoned",
	} {
		out, err := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "explain", field).CombinedOutput()
		if err != nil {
			t.Errorf("kubectl explain %s: %v\n%s", field, err, out)
			continue
		}
		if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), want) {
			t.Errorf("kubectl explain %s does not say %q:\n%s", field, want, out)
		}
	}
}

// TestLiveChangeEditsRefused: the API server refuses each bad edit of the
// live-change fields at once, with a message naming the field, and keeps the
// stored object as it was.
func TestLiveChangeEditsRefused(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	mtu := func(v int32) *int32 { return &v }
	for _, c := range []struct {
		name string
		spec v1alpha1.NetshiftNetworkSpec
		want string
	}{
		{"MTU below 576", v1alpha1.NetshiftNetworkSpec{MTU: mtu(500)}, "spec.mtu"},
		{"MTU over the underlay minus VXLAN", v1alpha1.NetshiftNetworkSpec{MTU: mtu(1451)}, "spec.mtu must be at most spec.underlay.mtu minus the tunnel overhead"},
		{"MTU over the underlay minus Geneve", v1alpha1.NetshiftNetworkSpec{MTU: mtu(1443), Encapsulation: v1alpha1.EncapGeneve}, "VXLAN 50, Geneve 58"},
		{"port 0", v1alpha1.NetshiftNetworkSpec{MTU: mtu(1450), VXLANPort: -1}, "spec.vxlanPort"},
		{"port 70000", v1alpha1.NetshiftNetworkSpec{MTU: mtu(1450), GenevePort: 70000}, "spec.genevePort"},
		{"underlay MTU 100", v1alpha1.NetshiftNetworkSpec{MTU: mtu(1450), Underlay: v1alpha1.UnderlaySettings{MTU: 100}}, "spec.underlay.mtu"},
		{"unknown encapsulation", v1alpha1.NetshiftNetworkSpec{MTU: mtu(1450), Encapsulation: "gre"}, "spec.encapsulation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: c.spec}
			err := env.Client.Create(ctx, cn)
			if err == nil {
				_ = env.Client.Delete(ctx, cn)
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}

	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: mtu(1450)}}
	if err := env.Client.Create(ctx, cn); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, cn) }()
	edit := func(change func(*v1alpha1.NetshiftNetworkSpec)) error {
		var cur v1alpha1.NetshiftNetwork
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cn), &cur); err != nil {
			t.Fatal(err)
		}
		change(&cur.Spec)
		return env.Client.Update(ctx, &cur)
	}
	if err := edit(func(s *v1alpha1.NetshiftNetworkSpec) { s.MTU = mtu(1400); s.VXLANPort = 4790 }); err == nil ||
		!strings.Contains(err.Error(), "cannot change in one edit") {
		t.Errorf("MTU and port in one edit: %v", err)
	}
	if err := edit(func(s *v1alpha1.NetshiftNetworkSpec) { s.Encapsulation = v1alpha1.EncapGeneve; s.MTU = mtu(1400) }); err == nil ||
		!strings.Contains(err.Error(), "spec.encapsulation") || !strings.Contains(err.Error(), "cannot be changed") {
		t.Errorf("an edit of the encapsulation: %v", err)
	}
	// Nodes still converging to the last change (silent past T0) freeze the same fields.
	var conv v1alpha1.NetshiftNetwork
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(cn), &conv)
	conv.Status.Change = &v1alpha1.NetworkChange{ID: "mtu-0", Kind: v1alpha1.ChangeMTU, From: 1500, To: 1450, Phase: v1alpha1.PhaseSucceeded, Converging: []string{"worker-3"}}
	if err := env.Client.Status().Update(ctx, &conv); err != nil {
		t.Fatal(err)
	}
	if err := edit(func(s *v1alpha1.NetshiftNetworkSpec) { s.MTU = mtu(1400) }); err == nil || !strings.Contains(err.Error(), "still converging") {
		t.Errorf("an edit while a node converges: %v", err)
	}
	// A change in progress (as the operator records it) freezes the live-change fields.
	var cur v1alpha1.NetshiftNetwork
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(cn), &cur)
	cur.Status.Change = &v1alpha1.NetworkChange{ID: "mtu-1", Kind: v1alpha1.ChangeMTU, From: 1500, To: 1450, Phase: v1alpha1.PhaseScheduled}
	if err := env.Client.Status().Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if err := edit(func(s *v1alpha1.NetshiftNetworkSpec) { s.MTU = mtu(1400) }); err == nil || !strings.Contains(err.Error(), "a live change is in progress") {
		t.Errorf("an edit during a change: %v", err)
	}
	if err := edit(func(s *v1alpha1.NetshiftNetworkSpec) { s.Drain.Disabled = true }); err != nil {
		t.Errorf("drain settings stay editable during a change: %v", err)
	}
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(cn), &cur)
	if *cur.Spec.MTU != 1450 || cur.Spec.VXLANPort != 4789 {
		t.Errorf("refused edits changed the object: mtu %d port %d", *cur.Spec.MTU, cur.Spec.VXLANPort)
	}
}
