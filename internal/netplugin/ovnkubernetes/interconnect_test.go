package ovnkubernetes

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/testenv"
)

// TestInterconnectIsTurnedOnInEveryWorkload: with the operator's own rights,
// a deployment that does not say whether it runs with interconnect is an
// error, not a guess; one that runs without it is off; Enable turns it on in
// every container, the Deployments before the DaemonSets, and the workloads are reported
// restarting until their pods run the new template; a second Enable does
// nothing.
func TestInterconnectIsTurnedOnInEveryWorkload(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := context.Background()
	c, admin := followCluster(t)
	if _, _, err := c.On(ctx); err == nil || !strings.Contains(err.Error(), EnvInterconnect) {
		t.Fatalf("no container says: %v, want an error naming %s", err, EnvInterconnect)
	}
	ds, dep := &appsv1.DaemonSet{}, &appsv1.Deployment{}
	setEnv := func(obj client.Object, tpl *corev1.PodTemplateSpec) {
		t.Helper()
		if err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		tpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "OTHER", Value: "kept"}, {Name: EnvInterconnect, Value: "false"}}
		if err := admin.Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	ds.Namespace, ds.Name, dep.Namespace, dep.Name = Namespace, "ovnkube-node", Namespace, "ovnkube-control-plane"
	setEnv(ds, &ds.Spec.Template)
	setEnv(dep, &dep.Spec.Template)
	if on, _, err := c.On(ctx); err != nil || on {
		t.Fatalf("off: On = %v, %v", on, err)
	}
	did, err := c.Enable(ctx)
	if err != nil || !strings.Contains(did, "deployment/ovnkube-control-plane, daemonset/ovnkube-node") {
		t.Fatalf("Enable: %q, %v; want the Deployments first, then the DaemonSets", did, err)
	}
	for _, w := range []struct {
		obj client.Object
		tpl *corev1.PodTemplateSpec
	}{{ds, &ds.Spec.Template}, {dep, &dep.Spec.Template}} {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(w.obj), w.obj); err != nil {
			t.Fatal(err)
		}
		if env := w.tpl.Spec.Containers[0].Env; len(env) != 2 || env[0].Value != "kept" || env[1].Value != "true" {
			t.Errorf("%s: env %v, want OTHER kept and %s=true", w.obj.GetName(), env, EnvInterconnect)
		}
	}
	on, restarting, err := c.On(ctx)
	if err != nil || !on || !strings.Contains(restarting, "daemonset/ovnkube-node: 0 of 0 pods restarted") ||
		!strings.Contains(restarting, "deployment/ovnkube-control-plane: 0 of 1 pods restarted") {
		t.Fatalf("restarting: On = %v, %q, %v; want on, both restarting", on, restarting, err)
	}
	// What the DaemonSet and Deployment controllers report once every pod runs the new template.
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}
	for _, obj := range []client.Object{ds, dep} {
		if err := admin.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if on, restarting, err = c.On(ctx); err != nil || !on || restarting != "" {
		t.Fatalf("rolled: On = %v, %q, %v; want on, nothing restarting", on, restarting, err)
	}
	if did, err := c.Enable(ctx); err != nil || did != "" {
		t.Fatalf("a second Enable: %q, %v; want nothing done", did, err)
	}
}
