package ovnkubernetes

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netplugin"
	"netshift.io/netshift/internal/netplugin/ovsbridge"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/zones"
)

// Name is the driver's name, as --network-plugin takes it.
const Name = "ovn-kubernetes"

// The plugin's objects, as its own deployment names them.
const (
	Namespace = "ovn-kubernetes"
	// ConfigMap holds the values ovnkube starts with: mtu, and encap_port
	// (which the deployment must pass to ovnkube as --encap-port).
	ConfigMap = "ovn-config"
	KeyMTU    = "mtu"
	KeyPort   = "encap_port"
	// RestartedAt is the pod template annotation a roll sets.
	RestartedAt = "netshift.io/restarted-at"
	// RestartPending, on ovn-config, says its values changed and ovnkube's
	// pods are still to be restarted with them.
	RestartPending = "netshift.io/restart-pending"
)

// Cluster is the driver in the operator.
type Cluster struct {
	// Reader reads the plugin's objects from the API server (the operator caches none of them).
	Reader client.Reader
	// Client writes them.
	Client client.Client
	// Now is the operator's clock.
	Now func() time.Time
	// Southbound, when the operator was given one (--ovn-sb), is the central
	// zone's southbound database, which the operator then sets the Geneve
	// port in itself: the way for a central zone served over SSL, whose
	// certificate the agents do not hold. nil: every node's agent sets its
	// zone's (StepEncapPort).
	Southbound *ovs.Southbound
}

var _ netplugin.Cluster = (*Cluster)(nil)

// Name is "ovn-kubernetes".
func (c *Cluster) Name() string { return Name }

// Steps: an MTU goes through what sends into the pod network first (the
// routes ovnkube-node locked to the MTU, which size what the node itself
// sends to services, and the pods' eth0), then the path: the pods' veths'
// node ends and br-int's internal ports (ovn-k8s-mp0 among them). A Geneve
// port is the southbound Encap rows' (the tunnels are ovn-controller's,
// built from them), which every node sets in its zone's database at T0, or
// the operator in the central zone's when it holds it.
func (c *Cluster) Steps(kind v1alpha1.ChangeKind, _ v1alpha1.Encapsulation) livechange.NodeSteps {
	s := livechange.NodeSteps{Path: []v1alpha1.StepAction{StepRouteMTU, netplugin.StepPodMTU, netplugin.StepHostVethMTU, netplugin.StepNodePortMTU}}
	if kind == v1alpha1.ChangeGenevePort && c.TunnelPortRecord(kind) == nil {
		s.Tunnel = []v1alpha1.StepAction{StepEncapPort}
	}
	return s
}

// TunnelPortRecord is the central zone's southbound Encap rows when the
// operator holds that database; between changes it keeps the applied port
// on them, as a chassis that registers again comes without it.
func (c *Cluster) TunnelPortRecord(kind v1alpha1.ChangeKind) netplugin.TunnelPortRecord {
	if kind != v1alpha1.ChangeGenevePort || c.Southbound == nil {
		return nil
	}
	return ovsbridge.EncapRecord{SB: c.Southbound}
}

// Zones: a node's pods are the DaemonSet ovnkube-node's, which read the
// node's zone label when they start; the central zone (its databases,
// ovn-northd and ovnkube controller) is the Deployment ovnkube-master, which
// runs OVN-Kubernetes' legacy master until interconnect is on. The cluster
// manager (ovnkube-control-plane) runs in every layout and is never scaled.
func (c *Cluster) Zones() *netplugin.Zones {
	return &netplugin.Zones{Namespace: Namespace, NodePods: "app=ovnkube-node", Central: CentralDeployment, Interconnect: c,
		LeftCentral: []string{zones.RemoteZoneMigrated}}
}

// CentralDeployment runs the central zone.
const CentralDeployment = "ovnkube-master"

// Follow writes the applied MTU and Geneve port into ovn-config and, when
// that changed it, restarts ovnkube's pods (Workloads, by their pod
// template) so that they run with them. The restart is owed from the moment
// the ConfigMap changes: the same write marks it (RestartPending), and the
// mark goes only once every workload was restarted, so an operator that dies
// in between restarts them at its next pass. A key ovn-config lacks is
// ovnkube's default (mtu 1400, Geneve port 6081), as ovnkube reads it: a
// cluster whose ovn-config never named the port is not restarted to name it.
func (c *Cluster) Follow(ctx context.Context, applied v1alpha1.AppliedNetwork) (string, error) {
	var cm corev1.ConfigMap
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ConfigMap}, &cm); err != nil {
		return "", fmt.Errorf("ConfigMap %s/%s: %w", Namespace, ConfigMap, err)
	}
	want := map[string]string{KeyMTU: strconv.Itoa(int(applied.MTU)), KeyPort: strconv.Itoa(int(applied.GenevePort))}
	values := fmt.Sprintf("mtu=%s,encap_port=%s", want[KeyMTU], want[KeyPort])
	patch := client.MergeFrom(cm.DeepCopy())
	changed := false
	for k, v := range want {
		if have, ok := cm.Data[k]; (ok && have != v) || (!ok && v != defaults[k]) {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[k], changed = v, true
		}
	}
	if !changed && cm.Annotations[RestartPending] == "" {
		return "", nil
	}
	if changed {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[RestartPending] = values
		if err := c.Client.Patch(ctx, &cm, patch); err != nil {
			return "", fmt.Errorf("ConfigMap %s/%s: set %s: %w", Namespace, ConfigMap, values, err)
		}
	}
	rolled, err := c.roll(ctx)
	if err != nil {
		return "", err
	}
	done := client.MergeFrom(cm.DeepCopy())
	delete(cm.Annotations, RestartPending)
	if err := c.Client.Patch(ctx, &cm, done); err != nil {
		return "", fmt.Errorf("ConfigMap %s/%s: the restart is done: %w", Namespace, ConfigMap, err)
	}
	return fmt.Sprintf("%s/%s says %s; restarted %v", Namespace, ConfigMap, values, rolled), nil
}

// defaults are ovnkube's values for a key ovn-config lacks.
var defaults = map[string]string{KeyMTU: "1400", KeyPort: "6081"}

// Workloads are the Deployments, then the DaemonSets, whose ovnkube
// processes take the MTU and the port from ovn-config: the central side
// first (the cluster manager, or the legacy master), then the nodes' (a zone
// controller's, and every node's). Its databases take neither.
var (
	Deployments = []string{"ovnkube-control-plane", "ovnkube-master"}
	DaemonSets  = []string{"ovnkube-zone-controller", "ovnkube-node"}
)

// roll restarts the plugin's workloads that the cluster runs, as `kubectl
// rollout restart` does.
func (c *Cluster) roll(ctx context.Context) ([]string, error) {
	ws, err := c.workloads(ctx)
	if err != nil {
		return nil, err
	}
	at := c.Now().UTC().Format(time.RFC3339)
	var rolled []string
	for _, w := range ws {
		if err := c.restart(ctx, w.obj, w.template, at); err != nil {
			return rolled, err
		}
		rolled = append(rolled, w.name())
	}
	return rolled, nil
}

// get reads one of the plugin's workloads; ok is false when it does not exist.
func (c *Cluster) get(ctx context.Context, name string, obj client.Object) (bool, error) {
	err := c.Reader.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s/%s: %w", Namespace, name, err)
	}
	return true, nil
}

func (c *Cluster) restart(ctx context.Context, obj client.Object, template *corev1.PodTemplateSpec, at string) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	if template.Annotations == nil {
		template.Annotations = map[string]string{}
	}
	template.Annotations[RestartedAt] = at
	if err := c.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("restart %s/%s: %w", Namespace, obj.GetName(), err)
	}
	return nil
}
