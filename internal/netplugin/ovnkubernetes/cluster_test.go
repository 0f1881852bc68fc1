package ovnkubernetes

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/testenv"
)

var (
	env        *testenv.Env
	envMissing error
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, &envMissing)) }

func pluginObjects() []client.Object {
	labels := map[string]string{"app": "ovnkube-node"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ovnkube", Image: "ovnkube"}}}}
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ConfigMap},
			Data: map[string]string{KeyMTU: "1400", KeyPort: "6081", "net_cidr": "10.128.0.0/14/23"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "ovnkube-node"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "ovnkube-control-plane"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}},
	}
}

// TestFollowWritesOVNConfigAndRestartsThePods: with the operator's own rights
// (config/components/ovn-kubernetes), Follow writes the applied MTU and port
// into ovn-config, keeps its other keys, and restarts ovnkube's Deployment
// and DaemonSet once; a second Follow with the same network does nothing.
func TestFollowWritesOVNConfigAndRestartsThePods(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c, admin := followCluster(t)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { return at }
	did, err := c.Follow(ctx, v1alpha1.AppliedNetwork{MTU: 1300, VXLANPort: 4789, GenevePort: 6090})
	if err != nil || did == "" {
		t.Fatalf("Follow: %q, %v", did, err)
	}
	var cm corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data[KeyMTU] != "1300" || cm.Data[KeyPort] != "6090" || cm.Data["net_cidr"] != "10.128.0.0/14/23" {
		t.Fatalf("ovn-config after Follow: %v", cm.Data)
	}
	var ds appsv1.DaemonSet
	var dep appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "ovnkube-node"}, &ds); err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "ovnkube-control-plane"}, &dep); err != nil {
		t.Fatal(err)
	}
	want := at.Format(time.RFC3339)
	if ds.Spec.Template.Annotations[RestartedAt] != want || dep.Spec.Template.Annotations[RestartedAt] != want {
		t.Fatalf("pods not restarted: daemonset %v, deployment %v", ds.Spec.Template.Annotations, dep.Spec.Template.Annotations)
	}
	at = at.Add(time.Minute)
	if did, err := c.Follow(ctx, v1alpha1.AppliedNetwork{MTU: 1300, VXLANPort: 4789, GenevePort: 6090}); err != nil || did != "" {
		t.Fatalf("a second Follow with the same network: %q, %v; want nothing done", did, err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "ovnkube-node"}, &ds); err != nil {
		t.Fatal(err)
	}
	if ds.Spec.Template.Annotations[RestartedAt] != want {
		t.Fatalf("restarted again with nothing changed: %v", ds.Spec.Template.Annotations)
	}
}

// TestFollowWithoutOVNConfigSaysWhat: a cluster without the ConfigMap gets
// an error naming it, and nothing is restarted.
func TestFollowWithoutOVNConfigSaysWhat(t *testing.T) {
	testenv.Require(t, envMissing)
	operator, err := env.OperatorClient()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Reader: operator, Client: operator, Now: time.Now}
	_, err = c.Follow(context.Background(), v1alpha1.AppliedNetwork{MTU: 1300, GenevePort: 6081})
	if err == nil || !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "ConfigMap ovn-kubernetes/ovn-config") {
		t.Fatalf("Follow without ovn-config: %v", err)
	}
}

// TestFollowRestartsNothingAtInstall: an ovn-config that carries the applied
// MTU and names no port (ovnkube's default 6081 is applied) is left as it
// is, and no pod is restarted: installing netshift restarts nothing.
func TestFollowRestartsNothingAtInstall(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c, admin := followCluster(t)
	editOVNConfig(t, admin, func(cm *corev1.ConfigMap) { delete(cm.Data, KeyPort) })
	if did, err := c.Follow(ctx, v1alpha1.AppliedNetwork{MTU: 1400, VXLANPort: 4789, GenevePort: 6081}); err != nil || did != "" {
		t.Fatalf("Follow on a fresh install: %q, %v; want nothing done", did, err)
	}
	var ds appsv1.DaemonSet
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "ovnkube-node"}, &ds); err != nil {
		t.Fatal(err)
	}
	if _, ok := ds.Spec.Template.Annotations[RestartedAt]; ok {
		t.Fatalf("ovnkube-node restarted at install: %v", ds.Spec.Template.Annotations)
	}
}

// TestARestartOwedIsRestartedLater: an ovn-config whose values were written
// but whose pods were not restarted yet (an operator that died in between:
// the restart-pending mark) gets its pods restarted at the next Follow, and
// the mark goes.
func TestARestartOwedIsRestartedLater(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c, admin := followCluster(t)
	editOVNConfig(t, admin, func(cm *corev1.ConfigMap) {
		cm.Data[KeyMTU] = "1300"
		cm.Annotations = map[string]string{RestartPending: "mtu=1300,encap_port=6081"}
	})
	if did, err := c.Follow(ctx, v1alpha1.AppliedNetwork{MTU: 1300, VXLANPort: 4789, GenevePort: 6081}); err != nil || !strings.Contains(did, "restarted") {
		t.Fatalf("Follow with a restart owed: %q, %v", did, err)
	}
	var ds appsv1.DaemonSet
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "ovnkube-node"}, &ds); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	if ds.Spec.Template.Annotations[RestartedAt] == "" || cm.Annotations[RestartPending] != "" {
		t.Fatalf("after Follow: daemonset %v, ovn-config %v", ds.Spec.Template.Annotations, cm.Annotations)
	}
}

// TestTheRoutesGoFirst: what sends into the pod network (the node's routes,
// the pods) shrinks first, the path after.
func TestTheRoutesGoFirst(t *testing.T) {
	s := (&Cluster{}).Steps(v1alpha1.ChangeMTU, v1alpha1.EncapGeneve)
	if len(s.Path) != 4 || s.Path[0] != StepRouteMTU || len(s.Tunnel) != 0 {
		t.Fatalf("steps %+v", s)
	}
}

// editOVNConfig changes ovn-config as someone else would.
func editOVNConfig(t *testing.T, admin client.Client, edit func(*corev1.ConfigMap)) {
	t.Helper()
	ctx := context.Background()
	var cm corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	edit(&cm)
	if err := admin.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
}

// followCluster creates ovnkube's objects and a driver acting with the operator's rights.
func followCluster(t *testing.T) (*Cluster, client.Client) {
	t.Helper()
	ctx := context.Background()
	admin := env.Client
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range pluginObjects() {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
	}
	operator, err := env.OperatorClient()
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Reader: operator, Client: operator, Now: time.Now}, admin
}
