package kubenode_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/cri"
	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/lab/kubenode/kubenodetest"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
)

func TestRealNodesRunPodsThroughTheCNIChain(t *testing.T) {
	c := kubenodetest.Start(t, kubenodetest.Options{Nodes: 2, MTU: 1450})
	for i := range c.Nodes { // node-specific MTUs: 1310 and 1320
		if err := nodeconfig.Write(c.NetworkConfig(i), nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{
			MTU: int32(1310 + 10*i), Encapsulation: v1alpha1.EncapVXLAN, TunnelPort: 4789}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c.Namespace(t, "web")
	replicas := int32(4)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
			Containers: []corev1.Container{{Name: "web", Image: images.WorkloadRef, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sleep", "3600"}}}}}}}
	if _, err := c.Clients.AppsV1().Deployments("web").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := c.WaitPods(t, "web", "app=web", int(replicas))
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
		if len(p.Status.ContainerStatuses) != 1 || !strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://") {
			t.Errorf("pod %s: container status %+v, want a containerd container", p.Name, p.Status.ContainerStatuses)
		}
		if p.Spec.ServiceAccountName != "default" || len(p.Spec.Volumes) == 0 {
			t.Errorf("pod %s has no ServiceAccount token volume: %+v", p.Name, p.Spec.Volumes)
		}
	}
	if len(perNode) != 2 {
		t.Errorf("pods per node %v: the scheduler should spread them over both nodes", perNode)
	}

	// Each pod has its node's MTU (1310 and 1320), set by netshift-cni in containerd's CNI
	// chain, as the node's runtime shows it.
	for i, n := range c.Nodes {
		client, err := cri.Dial(n.Socket())
		if err != nil {
			t.Fatal(err)
		}
		sandboxes, err := client.Sandboxes(ctx)
		client.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(sandboxes) != perNode[n.Name] {
			t.Errorf("node %s: the runtime has %d pod sandboxes, the API %d pods", n.Name, len(sandboxes), perNode[n.Name])
		}
		for _, s := range sandboxes {
			path, err := s.NetnsPath("/proc")
			if err != nil {
				t.Fatal(err)
			}
			h, err := netdev.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			mtu, err := h.MTU("eth0")
			h.Close()
			if want := 1310 + 10*i; err != nil || mtu != want {
				t.Errorf("pod %s on %s: eth0 MTU %d, %v; want the node's %d", s, n.Name, mtu, err, want)
			}
		}
	}

	// The real disruption controller enforces a PodDisruptionBudget: with no room, an
	// eviction is refused.
	minAvailable := intstr.FromInt32(replicas)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := c.Clients.PolicyV1().PodDisruptionBudgets("web").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var evictErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		evictErr = c.Clients.CoreV1().Pods("web").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Name, Namespace: "web"}})
		if apierrors.IsTooManyRequests(evictErr) {
			break
		}
	}
	if !apierrors.IsTooManyRequests(evictErr) || !strings.Contains(evictErr.Error(), "disruption budget") {
		t.Fatalf("eviction under a budget with no room: %v; want 429 from the disruption budget", evictErr)
	}
}
