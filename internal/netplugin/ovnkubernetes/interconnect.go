package ovnkubernetes

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/netplugin"
)

// EnvInterconnect is the variable OVN-Kubernetes' deployment turns
// interconnect on with (OVN_ENABLE_INTERCONNECT, as ovnkube.sh reads it): on
// every container of its workloads.
const EnvInterconnect = "OVN_ENABLE_INTERCONNECT"

var _ netplugin.Interconnect = (*Cluster)(nil)

// workload is one of the plugin's Deployments or DaemonSets, read.
type workload struct {
	kind     string
	obj      client.Object
	template *corev1.PodTemplateSpec
	// rolled says whether every pod runs the current template ("" when they
	// do, else how far the roll is).
	rolled func() string
}

func (w workload) name() string { return w.kind + "/" + w.obj.GetName() }

// workloads reads those of Deployments and DaemonSets the cluster runs.
func (c *Cluster) workloads(ctx context.Context) ([]workload, error) {
	var out []workload
	for _, name := range Deployments {
		d := &appsv1.Deployment{}
		if ok, err := c.get(ctx, name, d); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, workload{kind: "deployment", obj: d, template: &d.Spec.Template, rolled: func() string { return deploymentRolled(d) }})
	}
	for _, name := range DaemonSets {
		ds := &appsv1.DaemonSet{}
		if ok, err := c.get(ctx, name, ds); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, workload{kind: "daemonset", obj: ds, template: &ds.Spec.Template, rolled: func() string { return daemonSetRolled(ds) }})
	}
	return out, nil
}

// On says whether every workload's containers have interconnect on, and
// which workloads' pods do not all run their current template yet.
func (c *Cluster) On(ctx context.Context) (bool, string, error) {
	ws, err := c.workloads(ctx)
	if err != nil {
		return false, "", err
	}
	var restarting []string
	seen, off := false, false
	for _, w := range ws {
		set, o := interconnectEnv(w.template)
		seen, off = seen || set, off || o
		if r := w.rolled(); r != "" {
			restarting = append(restarting, w.name()+": "+r)
		}
	}
	if !seen {
		return false, "", fmt.Errorf("no container of %s sets %s: whether OVN-Kubernetes runs with interconnect cannot be told",
			strings.Join(append(append([]string(nil), Deployments...), DaemonSets...), ", "), EnvInterconnect)
	}
	return !off, strings.Join(restarting, "; "), nil
}

// Enable sets EnvInterconnect to "true" in every container that has it off,
// the central side first, which restarts the workload's pods with it.
func (c *Cluster) Enable(ctx context.Context) (string, error) {
	ws, err := c.workloads(ctx)
	if err != nil {
		return "", err
	}
	var did []string
	for _, w := range ws {
		if _, off := interconnectEnv(w.template); !off {
			continue
		}
		// Locked on the version read: a concurrent edit of the workload fails
		// this patch (tried again at the next pass) rather than being undone.
		patch := client.MergeFromWithOptions(w.obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		for i := range w.template.Spec.Containers {
			for j, e := range w.template.Spec.Containers[i].Env {
				if e.Name == EnvInterconnect {
					w.template.Spec.Containers[i].Env[j] = corev1.EnvVar{Name: EnvInterconnect, Value: "true"}
				}
			}
		}
		if err := c.Client.Patch(ctx, w.obj, patch); err != nil {
			return strings.Join(did, ", "), fmt.Errorf("%s/%s: set %s=true: %w", Namespace, w.name(), EnvInterconnect, err)
		}
		did = append(did, w.name())
	}
	if len(did) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s=true in %s", EnvInterconnect, strings.Join(did, ", ")), nil
}

// interconnectEnv says whether the template's containers set EnvInterconnect
// at all, and whether any sets it to other than "true".
func interconnectEnv(t *corev1.PodTemplateSpec) (set, off bool) {
	for _, ctr := range t.Spec.Containers {
		for _, e := range ctr.Env {
			if e.Name == EnvInterconnect {
				set = true
				off = off || e.Value != "true"
			}
		}
	}
	return set, off
}

func deploymentRolled(d *appsv1.Deployment) string {
	want := ptr.Deref(d.Spec.Replicas, 1)
	st := d.Status
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas < want || st.ReadyReplicas < want || st.Replicas > want {
		return fmt.Sprintf("%d of %d pods restarted and ready", min(st.UpdatedReplicas, st.ReadyReplicas), want)
	}
	return ""
}

func daemonSetRolled(ds *appsv1.DaemonSet) string {
	st := ds.Status
	if st.ObservedGeneration < ds.Generation || st.UpdatedNumberScheduled < st.DesiredNumberScheduled || st.NumberAvailable < st.DesiredNumberScheduled {
		return fmt.Sprintf("%d of %d pods restarted, %d available", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberAvailable)
	}
	return ""
}
