package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/hold"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
	"netshift.io/netshift/internal/zones"
)

func clientFor(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAgentMayChangeOnlyItsOwnNodeAndFields: with the agent ServiceAccount's
// node-bound identity, and with the per-node lab identity, an agent writes its
// own request but is refused on another node's object and on the drain
// controller's fields.
func TestAgentMayChangeOnlyItsOwnNodeAndFields(t *testing.T) {
	cl := newCluster(t)
	cl.startOperator()
	cl.createNodes("s1", "s2")
	identities := map[string]*rest.Config{
		"serviceaccount": env.AgentConfig("s1"),
		"per-node user":  env.As("netshift:agent:s1", []string{"netshift:agents", "system:authenticated"}, nil),
	}
	for name, cfg := range identities {
		t.Run(name, func(t *testing.T) {
			ac := clientFor(t, cfg)
			var own, other v1alpha1.NetshiftNodeState
			if err := ac.Get(cl.ctx, client.ObjectKey{Name: "s1"}, &own); err != nil {
				t.Fatalf("agent cannot read its own state: %v", err)
			}
			now := metav1.Now()
			patch := client.MergeFrom(own.DeepCopy())
			own.Status.DrainRequest = &v1alpha1.DrainRequest{Operation: "probe", State: v1alpha1.DrainRequestIdle, Time: &now}
			if err := ac.Status().Patch(cl.ctx, &own, patch); err != nil {
				t.Fatalf("agent refused on its own request field: %v", err)
			}

			if err := ac.Get(cl.ctx, client.ObjectKey{Name: "s2"}, &other); err != nil {
				t.Fatal(err)
			}
			patch = client.MergeFrom(other.DeepCopy())
			other.Status.DrainRequest = &v1alpha1.DrainRequest{Operation: "evil", State: v1alpha1.DrainRequestIdle}
			err := ac.Status().Patch(cl.ctx, &other, patch)
			if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "only its own node") {
				t.Fatalf("agent of s1 writing s2: err = %v, want a refusal naming its own node", err)
			}

			if err := ac.Get(cl.ctx, client.ObjectKey{Name: "s1"}, &own); err != nil {
				t.Fatal(err)
			}
			patch = client.MergeFrom(own.DeepCopy())
			own.Status.DrainStatus = v1alpha1.DrainingComplete
			err = ac.Status().Patch(cl.ctx, &own, patch)
			if err == nil || !strings.Contains(err.Error(), "are the operator's") {
				t.Fatalf("agent setting drainStatus: err = %v, want a refusal", err)
			}

			if err := ac.Delete(cl.ctx, &other); !apierrors.IsForbidden(err) {
				t.Fatalf("agent deleting a NetshiftNodeState: err = %v, want Forbidden", err)
			}
			if err := ac.Create(cl.ctx, &v1alpha1.NetshiftNodeState{ObjectMeta: metav1.ObjectMeta{Name: "s9"}}); !apierrors.IsForbidden(err) {
				t.Fatalf("agent creating a NetshiftNodeState: err = %v, want Forbidden", err)
			}
		})
	}
	// An agent identity without a node name may change nothing.
	anon := clientFor(t, env.As(testenv.AgentUser, []string{"system:serviceaccounts", "system:authenticated"}, nil))
	var own v1alpha1.NetshiftNodeState
	if err := anon.Get(cl.ctx, client.ObjectKey{Name: "s1"}, &own); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(own.DeepCopy())
	own.Status.DrainRequest = &v1alpha1.DrainRequest{Operation: "x", State: v1alpha1.DrainRequestIdle}
	if err := anon.Status().Patch(cl.ctx, &own, patch); err == nil {
		t.Fatal("an agent token not bound to a node changed a NetshiftNodeState")
	}
}

// TestLeastPrivilege asks the API server's authorizer what netshift's
// ServiceAccounts may do: exactly what they need, and nothing sensitive more.
func TestLeastPrivilege(t *testing.T) {
	testenv.Require(t, envMissing)
	type access struct{ verb, group, resource, sub, ns, name string }
	operatorNeeds := []access{
		{"list", "", "nodes", "", "", ""}, {"patch", "", "nodes", "", "", ""}, {"watch", "", "pods", "", "", ""},
		{"create", "", "pods", "eviction", "any", ""}, {"create", "events.k8s.io", "events", "", "any", ""},
		{"create", "netshift.io", "netshiftnodestates", "", "", ""}, {"delete", "netshift.io", "netshiftnodestates", "", "", ""},
		{"patch", "netshift.io", "netshiftnodestates", "status", "", ""}, {"patch", "netshift.io", "netshiftnodepools", "status", "", ""},
		{"watch", "netshift.io", "netshiftnetworks", "", "", ""}, {"patch", "netshift.io", "netshiftnetworks", "status", "", ""},
		{"create", "netshift.io", "netshiftnetworks", "", "", ""}, // from the nodes' reports
		{"patch", "netshift.io", "netshiftnodestates", "", "", ""},
		{"update", "coordination.k8s.io", "leases", "", operator.Namespace, ""},
		{"patch", "", "pods", "", "any", ""}, {"watch", "", "namespaces", "", "", ""}, // port pools: the ownership record
		// OVN zones (config/components/ovn-zones): the plugin's DaemonSet pods (narrowed
		// further by the admission policy) and its central Deployment's replicas, by name.
		{"delete", "", "pods", "", "ovn-kubernetes", ""},
		{"patch", "apps", "deployments", "scale", "ovn-kubernetes", "ovnkube-central"},
		{"watch", "apps", "deployments", "", "ovn-kubernetes", "ovnkube-central"},
		// OVN-Kubernetes (config/components/ovn-kubernetes): its ConfigMap and the workloads
		// that read it, by name.
		{"patch", "", "configmaps", "", "ovn-kubernetes", "ovn-config"},
		{"patch", "apps", "daemonsets", "", "ovn-kubernetes", "ovnkube-node"},
		{"patch", "apps", "deployments", "", "ovn-kubernetes", "ovnkube-control-plane"},
	}
	operatorMustNot := []access{
		{"patch", "", "configmaps", "", "ovn-kubernetes", "other"}, {"get", "", "configmaps", "", "ovn-kubernetes", "other"},
		{"patch", "apps", "daemonsets", "", "ovn-kubernetes", "ovnkube-db"}, {"patch", "apps", "daemonsets", "", "kube-system", "kube-proxy"},
		{"get", "", "secrets", "", "any", ""}, {"update", "", "pods", "", "any", ""}, {"patch", "", "namespaces", "", "", ""}, {"delete", "", "nodes", "", "", ""},
		{"patch", "apps", "deployments", "", "any", ""}, {"delete", "apps", "deployments", "", "any", ""},
		{"update", "netshift.io", "netshiftnodepools", "", "", ""}, {"update", "netshift.io", "netshiftnetworks", "", "", ""},
		{"update", "coordination.k8s.io", "leases", "", "kube-system", ""}, {"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", ""},
		{"update", "netshift.io", "netshiftnodestates", "", "", ""}, {"patch", "netshift.io", "netshiftnetworks", "", "", ""},
		{"delete", "netshift.io", "netshiftnetworks", "", "", ""},
		// Rights it once had in every namespace: delete any pod (kube-proxy's, a CSI
		// node plugin's), scale and read any Deployment (CoreDNS to 0).
		{"delete", "", "pods", "", "kube-system", ""}, {"delete", "", "pods", "", "any", ""},
		{"patch", "apps", "deployments", "scale", "kube-system", "coredns"},
		{"patch", "apps", "deployments", "scale", "ovn-kubernetes", "other"},
		{"get", "apps", "deployments", "", "kube-system", "coredns"}, {"list", "apps", "deployments", "", "any", ""},
		{"patch", "apps", "deployments", "", "ovn-kubernetes", "ovnkube-central"},
	}
	agentNeeds := []access{
		{"watch", "netshift.io", "netshiftnodestates", "", "", ""}, {"patch", "netshift.io", "netshiftnodestates", "status", "", ""},
		{"watch", "", "pods", "", "any", ""}, {"patch", "", "pods", "status", "any", ""}, {"watch", "", "nodes", "", "", ""}, // port plugging
	}
	agentMustNot := []access{
		{"update", "netshift.io", "netshiftnodestates", "", "", ""}, {"create", "netshift.io", "netshiftnodestates", "", "", ""},
		{"delete", "netshift.io", "netshiftnodestates", "", "", ""}, {"update", "", "nodes", "status", "", ""}, {"delete", "", "nodes", "", "", ""}, {"patch", "", "nodes", "", "", ""},
		{"create", "", "pods", "eviction", "any", ""}, {"get", "", "secrets", "", "any", ""}, {"patch", "", "pods", "", "any", ""},
		{"update", "", "pods", "status", "any", ""}, {"delete", "", "pods", "", "any", ""},
		{"patch", "netshift.io", "netshiftnodepools", "status", "", ""}, {"update", "netshift.io", "netshiftnodestates", "status", "", ""},
	}
	check := func(user string, list []access, want bool) {
		for _, a := range list {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:netshift-system", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.ns, Name: a.name},
			}}
			if err := env.Client.Create(t.Context(), sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != want {
				t.Errorf("%s %s %+v: allowed=%v, want %v", user, a.verb, a, sar.Status.Allowed, want)
			}
		}
	}
	check(testenv.OperatorUser, operatorNeeds, true)
	check(testenv.OperatorUser, operatorMustNot, false)
	check(testenv.AgentUser, agentNeeds, true)
	check(testenv.AgentUser, agentMustNot, false)
}

// TestAgentMayMarkOnlyItsOwnNodesPods: the agent writes the network-ready
// condition of the pods on its node, and is refused on another node's pod.
func TestAgentMayMarkOnlyItsOwnNodesPods(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ownpods-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, node string }{{"on-p1", "p1"}, {"on-p2", "p2"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns.Name},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte(`{"status":{"conditions":[{"type":"netshift.io/network-ready","status":"True","reason":"PortReady"}]}}`)
	for name, cfg := range map[string]*rest.Config{
		"serviceaccount": env.AgentConfig("p1"),
		"per-node user":  env.As("netshift:agent:p1", []string{"netshift:agents", "system:authenticated"}, nil),
	} {
		ac := clientFor(t, cfg)
		own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-p1", Namespace: ns.Name}}
		if err := ac.Status().Patch(ctx, own, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
			t.Errorf("%s: agent of p1 refused on its own node's pod: %v", name, err)
		}
		other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-p2", Namespace: ns.Name}}
		err := ac.Status().Patch(ctx, other, client.RawPatch(types.StrategicMergePatchType, body))
		if err == nil || !strings.Contains(err.Error(), "pods on its own node only") {
			t.Errorf("%s: agent of p1 marking a pod of p2: %v, want a refusal", name, err)
		}
	}
}

// TestAgentWritesNoNode: a node's zone annotation is its network plugin's to
// write; the agent changes nothing of any Node.
func TestAgentWritesNoNode(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zn1"}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	ac := clientFor(t, env.AgentConfig("zn1"))
	err := ac.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"k8s.ovn.org/zone-name":"zn1"}}}`)))
	if !apierrors.IsForbidden(err) {
		t.Errorf("the agent annotated its node's zone: %v, want forbidden", err)
	}
}

// TestOperatorDeletesOnlyDaemonSetPodsAndLabelsOnlyZones: to move a node
// between OVN zones the operator labels it k8s.ovn.org/zone-name and deletes
// its network plugin's DaemonSet pod; any other label, and any other pod, is
// refused.
func TestOperatorDeletesOnlyDaemonSetPodsAndLabelsOnlyZones(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	op := clientFor(t, env.OperatorConfig())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "zl-", Labels: map[string]string{"a": "b"}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	label := func(patch string) error {
		return op.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	probe := 0
	waitPolicyActive(t, "metadata.labels of node", func() error {
		probe++
		return label(fmt.Sprintf(`{"metadata":{"labels":{"a":"probe-%d"}}}`, probe))
	})
	if err := label(`{"metadata":{"labels":{"k8s.ovn.org/zone-name":"zl1"}}}`); err != nil {
		t.Errorf("the operator may not label a node's zone: %v", err)
	}
	if err := label(`{"metadata":{"labels":{"a":"c"}}}`); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "k8s.ovn.org/zone-name") {
		t.Errorf("the operator changed another label: %v", err)
	}
	// A DaemonSet's pods in the plugin's namespace (the test control plane's
	// ovn-kubernetes, as config/components/ovn-zones grants), and in another
	// namespace (kube-proxy's, a CSI node plugin's).
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-proxy-"}}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	daemonSetPod := func(ns, name string, owned bool) *corev1.Pod {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "plugin"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "plugin"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
		if err := env.Client.Create(ctx, ds); err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if owned {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := op.Delete(ctx, daemonSetPod("ovn-kubernetes", "ovnkube-node", true)); err != nil {
		t.Errorf("the operator may not delete the network plugin's DaemonSet pod: %v", err)
	}
	if err := op.Delete(ctx, daemonSetPod("ovn-kubernetes", "workload", false)); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "deletes only DaemonSet pods") {
		t.Errorf("the operator deleted a pod no DaemonSet owns: %v", err)
	}
	if err := op.Delete(ctx, daemonSetPod(other.Name, "kube-proxy", true)); !apierrors.IsForbidden(err) {
		t.Errorf("the operator deleted another namespace's DaemonSet pod: %v", err)
	}
}

// TestOnlyTheOperatorWritesAPodsPort: the pod annotation that records a pooled
// port's owner is refused from anyone but the operator (a pod's creator, an
// admin, a controller), at creation and after; other edits of the pod go on.
func TestOnlyTheOperatorWritesAPodsPort(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "portowner-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	const port = `{"id":"3f2a9c1e-7b4d-4c1a-9e0f-123456789abc","mac":"fa:16:3e:00:00:01","pool":"p/n/host=w1/"}`
	pod := func(name string, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Annotations: ann},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	waitPolicyActive(t, "netshift-port-owner", func() error {
		err := env.Client.Create(ctx, pod("probe", map[string]string{plug.PoolAnnotation: port}))
		if err == nil {
			_ = env.Client.Delete(ctx, pod("probe", nil))
		}
		return err
	})
	err := env.Client.Create(ctx, pod("forged", map[string]string{plug.PoolAnnotation: port}))
	if err == nil || !strings.Contains(err.Error(), "metadata.annotations[netshift.io/port]") || !strings.Contains(err.Error(), "may not set it") {
		t.Errorf("a pod created with its own port record: %v, want a refusal naming the annotation", err)
	}
	p := pod("plain", nil)
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	set := func(c client.Client, value string) error {
		patch := `{"metadata":{"annotations":{"netshift.io/port":` + value + `}}}`
		return c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns.Name}}, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	quoted, _ := json.Marshal(port)
	if err := set(env.Client, string(quoted)); err == nil || !strings.Contains(err.Error(), "may not change or remove it") {
		t.Errorf("an admin adding a port record: %v, want a refusal", err)
	}
	if err := set(clientFor(t, env.OperatorConfig()), string(quoted)); err != nil {
		t.Fatalf("the operator recording the pod's port: %v", err)
	}
	if err := set(env.Client, "null"); err == nil {
		t.Errorf("an admin removed the operator's port record")
	}
	// Nor through the status: a write of pods/status carries the pod's metadata.
	statusPatch := `{"metadata":{"annotations":{"netshift.io/port":null}}}`
	if err := env.Client.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns.Name}},
		client.RawPatch(types.MergePatchType, []byte(statusPatch))); err == nil || !strings.Contains(err.Error(), "may not change or remove it") {
		t.Errorf("an admin removing the port record through the pod's status: %v, want a refusal", err)
	}
	other := `{"metadata":{"annotations":{"team":"a"}}}`
	if err := env.Client.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns.Name}}, client.RawPatch(types.MergePatchType, []byte(other))); err != nil {
		t.Errorf("another annotation of a pod with a port record: %v", err)
	}
	var got corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil || got.Annotations[plug.PoolAnnotation] != port {
		t.Errorf("the operator's record is %q (%v), want it kept", got.Annotations[plug.PoolAnnotation], err)
	}
}

// TestOnlyTheOperatorRecordsALiveChangesHold: the node annotation that
// records a live change's hold (netshift uncordons such a node at the
// change's end) is refused from anyone but the operator (an admin, the node's
// kubelet), through the node and its status; other edits of the node go on.
func TestOnlyTheOperatorRecordsALiveChangesHold(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hold-record-1"}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	set := func(c client.Client, value string) error {
		patch := `{"metadata":{"annotations":{"` + hold.NodeAnnotation + `":` + value + `}}}`
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	waitPolicyActive(t, "netshift-live-change-hold", func() error {
		err := set(env.Client, `"probe"`)
		if err == nil {
			_ = set(clientFor(t, env.OperatorConfig()), "null")
		}
		return err
	})
	if err := set(env.Client, `"mtu-2-1"`); err == nil || !strings.Contains(err.Error(), "metadata.annotations[netshift.io/live-change-hold]") ||
		!strings.Contains(err.Error(), "may not change or remove it") {
		t.Errorf("an admin recording a live change's hold: %v, want a refusal naming the annotation", err)
	}
	if err := set(clientFor(t, env.OperatorConfig()), `"mtu-2-1"`); err != nil {
		t.Fatalf("the operator recording the node's hold: %v", err)
	}
	if err := set(env.Client, "null"); err == nil {
		t.Errorf("an admin removed the operator's hold record")
	}
	statusPatch := `{"metadata":{"annotations":{"` + hold.NodeAnnotation + `":"other"}}}`
	if err := env.Client.Status().Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}},
		client.RawPatch(types.MergePatchType, []byte(statusPatch))); err == nil || !strings.Contains(err.Error(), "may not change or remove it") {
		t.Errorf("an admin changing the hold record through the node's status: %v, want a refusal", err)
	}
	if err := env.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`))); err != nil {
		t.Errorf("another edit of a held node: %v", err)
	}
	var got corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), &got); err != nil || got.Annotations[hold.NodeAnnotation] != "mtu-2-1" {
		t.Errorf("the operator's record is %q (%v), want it kept", got.Annotations[hold.NodeAnnotation], err)
	}
}

// TestAgentsPodTokenMaySetOnlyItsCondition: with the token the kubelet gives
// the agent's own pod (a ServiceAccount token bound to the pod, which carries
// the pod's node), the agent sets the network-ready condition of a pod on its
// node; any other part of that pod's status, and any pod of another node, is
// refused.
func TestAgentsPodTokenMaySetOnlyItsCondition(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podtoken-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	agentPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "netshift-agent-", Namespace: operator.Namespace},
		Spec: corev1.PodSpec{NodeName: "tk1", ServiceAccountName: "netshift-agent", Containers: []corev1.Container{{Name: "agent", Image: "netshift"}}}}
	if err := env.Client.Create(ctx, agentPod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, agentPod, client.GracePeriodSeconds(0)) })
	tr, err := cs.CoreV1().ServiceAccounts(operator.Namespace).CreateToken(ctx, "netshift-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: agentPod.Name, UID: agentPod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for the agent's pod: %v", err)
	}
	cfg := rest.AnonymousClientConfig(env.Admin)
	cfg.BearerToken = tr.Status.Token
	ac := clientFor(t, cfg)

	for _, p := range []struct{ name, node string }{{"on-tk1", "tk1"}, {"on-tk2", "tk2"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns.Name},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	patch := func(name, body string) error {
		return ac.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}},
			client.RawPatch(types.StrategicMergePatchType, []byte(body)))
	}
	waitPolicyActive(t, "netshift-agent-own-pods", func() error { return patch("on-tk2", `{"status":{"message":"probe"}}`) })
	if err := patch("on-tk1", `{"status":{"conditions":[{"type":"netshift.io/network-ready","status":"True","reason":"PortReady"}]}}`); err != nil {
		t.Fatalf("the agent of tk1, with its pod's token, setting its condition on a pod of tk1: %v", err)
	}
	for what, c := range map[string]struct{ pod, body string }{
		"another node's pod":  {"on-tk2", `{"status":{"conditions":[{"type":"netshift.io/network-ready","status":"True","reason":"PortReady"}]}}`},
		"the pod's phase":     {"on-tk1", `{"status":{"phase":"Failed"}}`},
		"another condition":   {"on-tk1", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`},
		"the pod's addresses": {"on-tk1", `{"status":{"podIP":"10.0.0.9","podIPs":[{"ip":"10.0.0.9"}]}}`},
		"the pod's message":   {"on-tk1", `{"status":{"message":"evicted"}}`},
	} {
		if err := patch(c.pod, c.body); err == nil || !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("the agent of tk1 wrote %s: %v, want a refusal", what, err)
		}
	}
	var got corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "on-tk1"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase == corev1.PodFailed || got.Status.PodIP != "" || got.Status.Message != "" || len(got.Status.Conditions) != 1 {
		t.Errorf("refused writes changed the pod's status: %+v", got.Status)
	}
}

// waitPolicyActive waits until the API server enforces the admission policy
// (it loads a new policy a moment after it is created): until forbidden, a
// write the policy refuses, is refused by it.
func waitPolicyActive(t *testing.T, policy string, forbidden func() error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := forbidden()
		return err != nil && strings.Contains(err.Error(), policy), nil
	})
	if err != nil {
		t.Fatalf("the API server does not enforce policy %s: %v", policy, err)
	}
}

// TestTheOperatorChangesOnlyNetshiftsPartsOfNodesAndPods: the operator's patch
// rights on nodes and pods reach only what netshift owns there. Its cordon and
// its netshift.io/ labels, annotations and taints go through; another
// label, annotation, taint or a finalizer is refused, on a node and on a pod,
// while an admin may still make the same edits. OVN-Kubernetes' mark of a
// node's leaving the central zone is set and removed only where the node is
// labelled and annotated in the zone it moves into.
func TestTheOperatorChangesOnlyNetshiftsPartsOfNodesAndPods(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	op := clientFor(t, env.OperatorConfig())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "opwrites-",
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"sriovnetwork.openshift.io/state": "Idle", "other": "x",
			zones.RemoteZoneMigrated: "z", zones.ZoneAnnotation: zones.GlobalZone}}} // its plugin pod has put it in the central zone
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "opwrites-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, obj client.Object, body string) error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(body)))
	}
	// taints is a patch of the node's whole taint list (a list is replaced,
	// not merged): the current taints, but for drop, and add.
	taints := func(drop string, add ...corev1.Taint) string {
		var n corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), &n); err != nil {
			t.Fatal(err)
		}
		var list []corev1.Taint
		for _, tn := range n.Spec.Taints {
			if tn.Key != drop {
				list = append(list, tn)
			}
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": append(list, add...)}})
		return string(body)
	}
	nodeRef := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	podRef := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns.Name}}
	markLeft := func(zone string) string {
		return fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, zones.RemoteZoneMigrated, zone)
	}
	// Until the policies are in force, each probe is a real change (a no-op
	// patch would pass them anyway); an admin then puts the labels back.
	probe := 0
	waitPolicyActive(t, "metadata.labels of node", func() error {
		probe++
		return patch(op, nodeRef, fmt.Sprintf(`{"metadata":{"labels":{"team":"probe-%d"}}}`, probe))
	})
	waitPolicyActive(t, "metadata.labels of pod", func() error {
		probe++
		return patch(op, podRef, fmt.Sprintf(`{"metadata":{"labels":{"app":"probe-%d"}}}`, probe))
	})
	if err := patch(env.Client, nodeRef, `{"metadata":{"labels":{"team":"a"}}}`); err != nil {
		t.Fatal(err)
	}
	if err := patch(env.Client, podRef, `{"metadata":{"labels":{"app":"web"}}}`); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		what, obj string
		body      func() string
		refusal   string // "" when allowed
	}{
		{"cordon", "node", func() string { return `{"spec":{"unschedulable":true}}` }, ""},
		{"uncordon", "node", func() string { return `{"spec":{"unschedulable":false}}` }, ""},
		{"its own label", "node", func() string { return `{"metadata":{"labels":{"netshift.io/pool":"a"}}}` }, ""},
		{"its own annotation", "node", func() string { return `{"metadata":{"annotations":{"netshift.io/note":"a"}}}` }, ""},
		{"its own taint", "node", func() string {
			return taints("", corev1.Taint{Key: "netshift.io/moving", Effect: corev1.TaintEffectNoSchedule})
		}, ""},
		{"removing the legacy drain annotation", "node", func() string { return `{"metadata":{"annotations":{"sriovnetwork.openshift.io/state":null}}}` }, ""},
		{"removing OVN-Kubernetes' left-the-central-zone mark from a node not labelled for the central zone", "node", func() string {
			return `{"metadata":{"annotations":{"k8s.ovn.org/remote-zone-migrated":null}}}`
		}, "metadata.annotations of node"},
		{"removing it in the write that labels the node for the central zone", "node", func() string {
			return `{"metadata":{"labels":{"k8s.ovn.org/zone-name":"global"},"annotations":{"k8s.ovn.org/remote-zone-migrated":null}}}`
		}, "metadata.annotations of node"},
		{"labelling the node for the central zone", "node", func() string { return `{"metadata":{"labels":{"k8s.ovn.org/zone-name":"global"}}}` }, ""},
		{"removing the mark once the node is labelled and annotated in the central zone", "node", func() string {
			return `{"metadata":{"annotations":{"k8s.ovn.org/remote-zone-migrated":null}}}`
		}, ""},
		{"marking the node left while it is in the central zone", "node", func() string { return markLeft(node.Name) }, "metadata.annotations of node"},
		{"labelling the node for its own zone", "node", func() string {
			return fmt.Sprintf(`{"metadata":{"labels":{"k8s.ovn.org/zone-name":%q}}}`, node.Name)
		}, ""},
		{"marking it left before its plugin pod annotated it there", "node", func() string { return markLeft(node.Name) }, "metadata.annotations of node"},
		{"(its plugin pod annotates it in its own zone)", "admin", func() string {
			return fmt.Sprintf(`{"metadata":{"annotations":{"k8s.ovn.org/zone-name":%q}}}`, node.Name)
		}, ""},
		{"(an admin labels it for the central zone again)", "admin", func() string { return `{"metadata":{"labels":{"k8s.ovn.org/zone-name":"global"}}}` }, ""},
		{"marking it left while its label and annotation differ", "node", func() string { return markLeft(node.Name) }, "metadata.annotations of node"},
		{"(an admin labels it for its own zone again)", "admin", func() string {
			return fmt.Sprintf(`{"metadata":{"labels":{"k8s.ovn.org/zone-name":%q}}}`, node.Name)
		}, ""},
		{"(an admin marks it with another zone)", "admin", func() string { return markLeft("other") }, ""},
		{"replacing another's mark with its own zone's", "node", func() string { return markLeft(node.Name) }, "metadata.annotations of node"},
		{"(an admin removes that mark)", "admin", func() string { return `{"metadata":{"annotations":{"k8s.ovn.org/remote-zone-migrated":null}}}` }, ""},
		{"marking it left with another zone's name", "node", func() string { return markLeft("other") }, "metadata.annotations of node"},
		{"marking it left, valued with its own zone, once labelled and annotated there", "node", func() string { return markLeft(node.Name) }, ""},
		{"changing the mark", "node", func() string { return markLeft("other") }, "metadata.annotations of node"},
		{"another label", "node", func() string { return `{"metadata":{"labels":{"team":"b"}}}` }, "metadata.labels of node"},
		{"removing another label", "node", func() string { return `{"metadata":{"labels":{"team":null}}}` }, "metadata.labels of node"},
		{"another annotation", "node", func() string { return `{"metadata":{"annotations":{"other":"y"}}}` }, "metadata.annotations of node"},
		{"another taint", "node", func() string {
			return taints("", corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
		}, "spec.taints of node"},
		{"removing another taint", "node", func() string { return taints("node.kubernetes.io/not-ready") }, "spec.taints of node"},
		{"a finalizer", "node", func() string { return `{"metadata":{"finalizers":["example.com/keep"]}}` }, "metadata.finalizers"},
		{"its pod annotation", "pod", func() string { return `{"metadata":{"annotations":{"netshift.io/note":"a"}}}` }, ""},
		{"another pod annotation", "pod", func() string { return `{"metadata":{"annotations":{"other":"y"}}}` }, "metadata.annotations of pod"},
		{"a pod label", "pod", func() string { return `{"metadata":{"labels":{"app":"db"}}}` }, "metadata.labels of pod"},
		{"a pod's image", "pod", func() string { return `{"spec":{"containers":[{"name":"c","image":"evil"}]}}` }, "spec, metadata.finalizers"},
	} {
		obj, by := client.Object(nodeRef), op
		switch c.obj {
		case "pod":
			obj = podRef
		case "admin":
			by = env.Client
		}
		err := patch(by, obj, c.body())
		if c.refusal == "" && err != nil {
			t.Errorf("operator, %s of a %s: %v", c.what, c.obj, err)
		}
		if c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal) || !apierrors.IsForbidden(err)) {
			t.Errorf("operator, %s of a %s: %v, want a refusal naming %q", c.what, c.obj, err, c.refusal)
		}
	}
	var gotNode corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nodeRef), &gotNode); err != nil {
		t.Fatal(err)
	}
	tainted := map[string]bool{}
	for _, tn := range gotNode.Spec.Taints {
		tainted[tn.Key] = true
	}
	if gotNode.Labels["team"] != "a" || gotNode.Annotations["other"] != "x" || len(gotNode.Finalizers) != 0 || gotNode.Annotations[zones.RemoteZoneMigrated] != node.Name ||
		!tainted["netshift.io/moving"] || tainted["dedicated"] || !tainted["node.kubernetes.io/not-ready"] {
		t.Errorf("refused writes changed the node: labels %v annotations %v finalizers %v taints %v",
			gotNode.Labels, gotNode.Annotations, gotNode.Finalizers, gotNode.Spec.Taints)
	}
	// The same edits by an admin are not netshift's business.
	if err := patch(env.Client, nodeRef, `{"metadata":{"labels":{"team":"b"}}}`); err != nil {
		t.Errorf("an admin relabelling a node: %v", err)
	}
	if err := patch(env.Client, podRef, `{"metadata":{"labels":{"app":"db"}}}`); err != nil {
		t.Errorf("an admin relabelling a pod: %v", err)
	}
}

// TestTheOperatorWritesOnlyItsPodCondition: of a pod's status, the operator
// sets its netshift.io/port-assigned condition; the phase, the addresses,
// another condition or the message are refused (its old pods/status patch
// reached all of them).
func TestTheOperatorWritesOnlyItsPodCondition(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	op := clientFor(t, env.OperatorConfig())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "opstatus-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
		Spec: corev1.PodSpec{NodeName: "os1", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	patch := func(body string) error {
		return op.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns.Name}},
			client.RawPatch(types.StrategicMergePatchType, []byte(body)))
	}
	probe := 0
	waitPolicyActive(t, "netshift-operator-pod-status", func() error {
		probe++
		return patch(fmt.Sprintf(`{"status":{"message":"probe-%d"}}`, probe))
	})
	if err := env.Client.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(`{"status":{"message":""}}`))); err != nil {
		t.Fatal(err)
	}
	if err := patch(`{"status":{"conditions":[{"type":"netshift.io/port-assigned","status":"False","reason":"Waiting"}]}}`); err != nil {
		t.Fatalf("the operator setting its port-assigned condition: %v", err)
	}
	for what, body := range map[string]string{
		"the pod's phase":     `{"status":{"phase":"Failed"}}`,
		"another condition":   `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
		"the pod's addresses": `{"status":{"podIP":"10.0.0.9","podIPs":[{"ip":"10.0.0.9"}]}}`,
		"the pod's message":   `{"status":{"message":"evicted"}}`,
	} {
		if err := patch(body); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may set only its netshift.io/port-assigned condition") {
			t.Errorf("the operator wrote %s: %v, want a refusal", what, err)
		}
	}
	var got corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase == corev1.PodFailed || got.Status.PodIP != "" || got.Status.Message != "" || len(got.Status.Conditions) != 1 {
		t.Errorf("refused writes changed the pod's status: %+v", got.Status)
	}
}

// TestTheOperatorTouchesOnlyItsConfigMap: of the ConfigMaps, the operator may
// read, list, watch, create and delete ovn-interconnect-configuration in its
// namespace, and nothing else: another ConfigMap there (or elsewhere) can be
// neither read, listed, deleted nor created.
func TestTheOperatorTouchesOnlyItsConfigMap(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	op := clientFor(t, env.OperatorConfig())
	ns := operator.Namespace
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: ns}, Data: map[string]string{"k": "v"}}
	if err := env.Client.Create(ctx, other); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), other) })
	waitPolicyActive(t, "netshift's operator creates only", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}}
		err := op.Create(ctx, cm)
		if err == nil {
			_ = env.Client.Delete(ctx, cm)
		}
		return err
	})

	own := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: zones.ConfigMapName, Namespace: ns}, Data: zones.IntermediateData()}
	if err := op.Create(ctx, own); err != nil {
		t.Fatalf("the operator creating %s: %v", zones.ConfigMapName, err)
	}
	if err := op.Get(ctx, client.ObjectKeyFromObject(own), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the operator reading %s: %v", zones.ConfigMapName, err)
	}
	var byName corev1.ConfigMapList
	if err := op.List(ctx, &byName, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", zones.ConfigMapName)}); err != nil || len(byName.Items) != 1 {
		t.Errorf("the operator listing %s by name: %d items, %v", zones.ConfigMapName, len(byName.Items), err)
	}
	if err := op.Delete(ctx, own); err != nil {
		t.Errorf("the operator deleting %s: %v", zones.ConfigMapName, err)
	}

	forbidden := func(what string, err error, text string) {
		t.Helper()
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), text) {
			t.Errorf("the operator %s: %v, want forbidden (%q)", what, err, text)
		}
	}
	forbidden("reading another ConfigMap", op.Get(ctx, client.ObjectKeyFromObject(other), &corev1.ConfigMap{}), "cannot get resource")
	forbidden("listing every ConfigMap", op.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)), "cannot list resource")
	forbidden("deleting another ConfigMap", op.Delete(ctx, other), "cannot delete resource")
	forbidden("creating another ConfigMap", op.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine-now", Namespace: ns}}),
		"metadata.name of configmap "+ns+"/mine-now: netshift's operator creates only ovn-interconnect-configuration")
	forbidden("reading its ConfigMap's name in another namespace",
		op.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: zones.ConfigMapName}, &corev1.ConfigMap{}), "cannot get resource")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil || other.Data["k"] != "v" {
		t.Errorf("the other ConfigMap: %v %v", other.Data, err)
	}
}

// TestPeopleRoles: netshift-view, joined to Kubernetes' own view, reads
// netshift's objects and changes none; netshift-edit changes the network but
// not the port pools; netshift-admin manages the port pools too. Checked with
// the API server's own SubjectAccessReviews, once its aggregation controller
// has filled the aggregated roles.
func TestPeopleRoles(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	for user, role := range map[string]string{"people-viewer": "view", "people-editor": "netshift-edit", "people-admin": "netshift-admin"} {
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
		if err := env.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	}
	may := func(user, verb, resource string) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: resource, Verb: verb}}}
		if err := env.Client.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return may("people-viewer", "list", "netshiftnodepools") && may("people-editor", "patch", "netshiftnetworks") && may("people-admin", "create", "portpools"), nil
	})
	if err != nil {
		t.Fatalf("the aggregated roles never granted their rights: %v", err)
	}
	for _, c := range []struct {
		user, verb, resource string
		allowed              bool
	}{
		{"people-viewer", "get", "netshiftnetworks", true},
		{"people-viewer", "watch", "netshiftnodestates", true},
		{"people-viewer", "patch", "netshiftnetworks", false},
		{"people-viewer", "delete", "netshiftnodepools", false},
		{"people-viewer", "get", "portpools", false},
		{"people-editor", "list", "netshiftnodepools", true},
		{"people-editor", "create", "netshiftnodepools", true},
		{"people-editor", "patch", "netshiftnodestates", true},
		{"people-editor", "patch", "netshiftnodestates/status", false},
		{"people-editor", "create", "portpools", false},
		{"people-admin", "patch", "netshiftnetworks", true},
		{"people-admin", "delete", "portpools", true},
		{"people-admin", "patch", "netshiftnetworks/status", false},
	} {
		resource, sub, _ := strings.Cut(c.resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: c.user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: resource, Subresource: sub, Verb: c.verb}}}
		if err := env.Client.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != c.allowed {
			t.Errorf("%s %s %s: allowed %v, want %v", c.user, c.verb, c.resource, sar.Status.Allowed, c.allowed)
		}
	}
}
