package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/images"
	"netshift.io/netshift/internal/zones"
)

// The lab's stand-in for ovnkube, the OVN network plugin's pods, in an OVN lab:
//
//   - the DaemonSet ovnkube-node: its pod on each node reads the node's zone
//     label (k8s.ovn.org/zone-name) when it starts, has the node moved into
//     that zone (the lab's ordered move, run on the machine where the node's
//     OVN daemons live: the new zone prepared first, ovn-controller repointed,
//     the switch and router port moved, the Chassis_Private row awaited, the
//     old chassis deleted), then writes the node's zone annotation and reports
//     ready. A node with no label is left in the layout it has (the legacy
//     central one). Its exit changes nothing on the node: ovn-controller and
//     the flows stay.
//   - the Deployment ovnkube-central: its pod starts the central zone (its
//     NB, SB, ovn-northd and ovn-ic) when it starts, and retires it when it is
//     stopped with no node left in it (scaled to 0).
//
// Both pods ask the lab to run the work, through the node's lab directory,
// as netshift's own pods did before (lab-call).

// The stand-in's objects: what netshift's operator is told of (its defaults).
const (
	PluginNamespace  = "ovn-kubernetes"
	PluginNodeApp    = "ovnkube-node"
	PluginCentralApp = "ovnkube-central"
	pluginReadyFile  = "/tmp/ready"
)

// runsPlugin says whether the lab runs the stand-in: an OVN lab, but not a
// Neutron one (Neutron's ML2/OVN owns its central databases, which never
// change zones).
func (s *State) runsPlugin() bool { return s.Options.OVN && !s.Options.Neutron }

// pluginZoneLabel is the zone label a node of this lab registers with: the
// layout it was built in ("" for the legacy one, which has no zones).
func (s *State) pluginZoneLabel(node string) string {
	switch {
	case !s.Options.OVN && !s.runsOVNKubernetes() || s.Options.Zones == ZonesLegacy:
		return ""
	case s.Options.Zones == ZonesMulti:
		return node
	}
	return globalZone
}

// createPlugin creates the stand-in's namespace, identity, DaemonSet and
// Deployment (scaled to 0 in a multizone lab, whose central zone is retired).
func (s *State) createPlugin(ctx context.Context, c client.Client) error {
	labLabels := map[string]string{"netshift.io/lab-stand-in": "ovnkube"}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PluginNamespace, Labels: labLabels}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: PluginNodeApp, Namespace: PluginNamespace}},
		// A plugin pod reads its node and writes its zone annotation.
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lab-ovnkube-node"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lab-ovnkube-node"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lab-ovnkube-node"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: PluginNodeApp, Namespace: PluginNamespace}}},
		s.pluginDaemonSet(),
		s.pluginCentral(),
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("the lab's network plugin stand-in: %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// pluginPodSpec is a stand-in pod: on the node's network, privileged, the lab's
// image (already on every node), the node's lab directory mounted.
func pluginPodSpec(args ...string) corev1.PodSpec {
	return corev1.PodSpec{
		HostNetwork: true, PriorityClassName: "system-node-critical",
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		TerminationGracePeriodSeconds: ptr.To[int64](60),
		Containers: []corev1.Container{{
			Name: "ovnkube", Image: images.NetshiftRef, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: append([]string{"/usr/local/bin/netshift", "lab-plugin"}, args...),
			Env:     []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/cat", pluginReadyFile}}},
				PeriodSeconds: 1},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			// A failed move's last words are the container's termination message, which the
			// operator quotes in status.zones.held.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			VolumeMounts:             []corev1.VolumeMount{{Name: "lab", MountPath: "/run/netshift-lab"}},
		}},
		Volumes: []corev1.Volume{{Name: "lab", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/netshift-lab"}}}},
	}
}

func (s *State) pluginDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app": PluginNodeApp}
	spec := pluginPodSpec("node", "--node=$(NODE_NAME)")
	spec.ServiceAccountName = PluginNodeApp
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: PluginNodeApp, Namespace: PluginNamespace},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}

func (s *State) pluginCentral() *appsv1.Deployment {
	labels := map[string]string{"app": PluginCentralApp}
	replicas := int32(1)
	if s.Options.Zones == ZonesMulti {
		replicas = 0
	}
	spec := pluginPodSpec("central")
	spec.AutomountServiceAccountToken = ptr.To(false)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: PluginCentralApp, Namespace: PluginNamespace},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			// One central zone at a time: the old pod retires before a new one starts.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}

// PluginNode is the stand-in's node pod: it moves node into the zone of its
// label, annotates it, reports ready and waits to be stopped. A failed move
// is its exit (the kubelet starts it again, backing off).
func PluginNode(ctx context.Context, c client.Client, node, dir string, out io.Writer) error {
	var n corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
		return fmt.Errorf("node %s: read its zone label: %w", node, err)
	}
	zone := n.Labels[zones.ZoneLabel]
	if zone == "" {
		fmt.Fprintf(out, "node %s: no %s label: the node stays in the layout it has\n", node, zones.ZoneLabel)
		return servePlugin(ctx, nil)
	}
	start := time.Now()
	fmt.Fprintf(out, "node %s: joining zone %s\n", node, zone)
	if err := AskLab(ctx, dir, out, 5*time.Minute, "zone-move", node, zone); err != nil {
		return fmt.Errorf("node %s: move to zone %s: %w", node, zone, err)
	}
	if n.Annotations[zones.ZoneAnnotation] != zone {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, zones.ZoneAnnotation, zone)
		if err := c.Patch(ctx, &n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return fmt.Errorf("node %s: annotate its zone %s: %w", node, zone, err)
		}
	}
	fmt.Fprintf(out, "node %s: in zone %s, annotated, %d ms after the pod started\n", node, zone, time.Since(start).Milliseconds())
	return servePlugin(ctx, nil)
}

// PluginCentral is the stand-in's central pod: it starts the central zone,
// reports ready, and when stopped retires it (refused while nodes are still
// in it: a restarted pod leaves it running).
func PluginCentral(ctx context.Context, dir string, out io.Writer) error {
	if err := AskLab(ctx, dir, out, 5*time.Minute, "zone-central", "ensure"); err != nil {
		return fmt.Errorf("start the central zone: %w", err)
	}
	fmt.Fprintln(out, "the central zone runs")
	return servePlugin(ctx, func() {
		// The pod's context is over: the retirement gets its own time within the grace period.
		rctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		if err := AskLab(rctx, dir, out, 50*time.Second, "zone-central", "retire"); err != nil {
			fmt.Fprintf(out, "the central zone is left running: %v\n", err)
			return
		}
		fmt.Fprintln(out, "the central zone is retired")
	})
}

// servePlugin reports the pod ready and waits until it is stopped; then it
// runs atStop.
func servePlugin(ctx context.Context, atStop func()) error {
	if err := os.MkdirAll(filepath.Dir(pluginReadyFile), 0o755); err != nil {
		return fmt.Errorf("report ready: %w", err)
	}
	if err := os.WriteFile(pluginReadyFile, []byte("ready\n"), 0o644); err != nil {
		return fmt.Errorf("report ready: %w", err)
	}
	<-ctx.Done()
	_ = os.Remove(pluginReadyFile)
	if atStop != nil {
		atStop()
	}
	return nil
}

// AskLab asks the lab, through the node's lab directory dir, to run one of its
// zone commands, writes its output to out and waits up to wait for it.
func AskLab(ctx context.Context, dir string, out io.Writer, wait time.Duration, args ...string) error {
	r, err := PlaceCall(ctx, dir, args, wait)
	if err != nil {
		return err
	}
	fmt.Fprint(out, r.Output)
	if r.ExitCode != 0 {
		return fmt.Errorf("lab %s: exit code %d: %s", strings.Join(args, " "), r.ExitCode, lastOutputLine(r.Output))
	}
	return nil
}

func lastOutputLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// restartIntoZone moves a node the way netshift's operator does: its zone
// label set, its plugin pod deleted, and back once the pod the DaemonSet
// starts in its place has annotated the node.
func restartIntoZone(ctx context.Context, c client.Client, node, zone string) error {
	var n corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, zones.ZoneLabel, zone)
	if err := c.Patch(ctx, &n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("node %s: label %s=%s: %w", node, zones.ZoneLabel, zone, err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(PluginNamespace), client.MatchingLabels{"app": PluginNodeApp}); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			if err := c.Delete(ctx, &p); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("node %s: restart its plugin pod %s: %w", node, p.Name, err)
			}
		}
	}
	return poll(ctx, 50*time.Millisecond, 5*time.Minute, func(context.Context) (bool, error) {
		err := c.Get(ctx, types.NamespacedName{Name: node}, &n)
		return err == nil && n.Annotations[zones.ZoneAnnotation] == zone, nil
	}, func() error {
		return fmt.Errorf("node %s: not annotated in zone %s within 5m by its new plugin pod", node, zone)
	})
}

// scaleCentral scales the central zone's Deployment and waits until the zone
// runs (its pod ready) or is retired (its pod gone, the lab's zone stopped).
func (s *State) scaleCentral(ctx context.Context, c client.Client, replicas int32) error {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: PluginNamespace, Name: PluginCentralApp}}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("scale %s/%s to %d: %w", PluginNamespace, PluginCentralApp, replicas, err)
	}
	return poll(ctx, 50*time.Millisecond, 5*time.Minute, func(context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, nil
		}
		if replicas == 0 {
			var pods corev1.PodList
			err := c.List(ctx, &pods, client.InNamespace(PluginNamespace), client.MatchingLabels{"app": PluginCentralApp})
			return err == nil && len(pods.Items) == 0 && s.centralUp() != nil, nil
		}
		return dep.Status.ReadyReplicas >= replicas && s.centralUp() == nil, nil
	}, func() error {
		return fmt.Errorf("the central zone's Deployment did not reach %d ready replicas within 5m", replicas)
	})
}

// pauseOperator scales netshift's operator to 0 until the returned restore.
func pauseOperator(ctx context.Context, c client.Client) (restore func() error, err error) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "netshift-system", Name: "netshift-operator"}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		return nil, err
	}
	was := ptr.Deref(dep.Spec.Replicas, 1)
	scale := func(n int32) error {
		return c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))))
	}
	if err := scale(0); err != nil {
		return nil, fmt.Errorf("pause the operator: %w", err)
	}
	if err := poll(ctx, 50*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
		var pods corev1.PodList
		err := c.List(ctx, &pods, client.InNamespace("netshift-system"), client.MatchingLabels{"app.kubernetes.io/name": operatorLabel})
		return err == nil && len(pods.Items) == 0, nil
	}, func() error { return fmt.Errorf("the operator's pods did not stop within 2m") }); err != nil {
		return nil, err
	}
	return func() error {
		if err := scale(was); err != nil {
			return fmt.Errorf("restore the operator: %w", err)
		}
		return poll(context.Background(), 50*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
			err := c.Get(context.Background(), client.ObjectKeyFromObject(dep), dep)
			return err == nil && dep.Status.ReadyReplicas >= was, nil
		}, func() error { return fmt.Errorf("the operator did not come back within 2m") })
	}, nil
}
