package standin

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/images"
)

// The stand-in's objects: what netshift's operator is told of (its defaults).
const (
	Namespace  = "ovn-kubernetes"
	NodeApp    = "ovnkube-node"
	CentralApp = "ovnkube-central"
	readyFile  = "/tmp/ready"
)

// Create creates the stand-in's namespace, identity, DaemonSet and
// Deployment; in a multizone lab, whose central zone is retired, the
// Deployment is scaled to 0. Objects that exist are left as they are.
func Create(ctx context.Context, c client.Client, multizone bool) error {
	for _, o := range objects(multizone) {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("the lab's network plugin stand-in: %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func objects(multizone bool) []client.Object {
	labLabels := map[string]string{"netshift.io/lab-stand-in": "ovnkube"}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace, Labels: labLabels}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: NodeApp, Namespace: Namespace}},
		// A plugin pod reads its node and writes its zone annotation.
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lab-ovnkube-node"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lab-ovnkube-node"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lab-ovnkube-node"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: NodeApp, Namespace: Namespace}}},
		nodeDaemonSet(),
		centralDeployment(multizone),
	}
}

// podSpec is a stand-in pod: on the node's network, privileged, the lab's
// image (already on every node), the node's lab directory mounted.
func podSpec(args ...string) corev1.PodSpec {
	return corev1.PodSpec{
		HostNetwork: true, PriorityClassName: "system-node-critical",
		Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		TerminationGracePeriodSeconds: ptr.To[int64](60),
		Containers: []corev1.Container{{
			Name: "ovnkube", Image: images.NetshiftRef, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: append([]string{"/usr/local/bin/netshift", "lab-plugin"}, args...),
			Env:     []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/cat", readyFile}}},
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

func nodeDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app": NodeApp}
	spec := podSpec("node", "--node=$(NODE_NAME)")
	spec.ServiceAccountName = NodeApp
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: NodeApp, Namespace: Namespace},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}

func centralDeployment(multizone bool) *appsv1.Deployment {
	labels := map[string]string{"app": CentralApp}
	replicas := int32(1)
	if multizone {
		replicas = 0
	}
	spec := podSpec("central")
	spec.AutomountServiceAccountToken = ptr.To(false)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: CentralApp, Namespace: Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			// One central zone at a time: the old pod retires before a new one starts.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}
