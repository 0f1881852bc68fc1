package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/zones"
)

// Serve is the lab's supervisor, a process of its own that `lab up` starts:
// the control plane (API server, etcd, controller manager, scheduler), every
// node's Kubernetes side (containerd, kubelet, kube-proxy), netshift installed
// from config/, the probe's pods; then it reboots nodes and answers their
// lab calls until it is told to stop, and stops all of it.
func Serve(ctx context.Context, name, binary string) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	self, err := Identify("supervisor", os.Getpid())
	if err != nil {
		return err
	}
	if err := s.record(func() { s.Processes = append(s.Processes, self) }); err != nil {
		return err
	}
	return s.serveRealNodes(ctx, binary)
}

// startControlPlane starts the lab's control plane as this process's
// children, records them (so `lab down` stops them even if this process
// dies) and writes the admin kubeconfig into the lab's directory.
func (s *State) startControlPlane(o controlplane.Options) (*controlplane.ControlPlane, string, error) {
	cp, err := controlplane.StartWith(o)
	if err != nil {
		return nil, "", err
	}
	for _, c := range ChildrenOf(os.Getpid()) {
		switch c.Comm {
		case "kube-apiserver", "etcd", "kube-controller", "kube-scheduler": // comm: 15 bytes at most
			if err := s.record(func() { s.Processes = append(s.Processes, c) }); err != nil {
				cp.Stop()
				return nil, "", err
			}
		}
	}
	kubeconfig := s.Path("admin.kubeconfig")
	data, err := os.ReadFile(cp.Kubeconfig)
	if err == nil {
		err = os.WriteFile(kubeconfig, data, 0o600)
	}
	if err != nil {
		cp.Stop()
		return nil, "", err
	}
	return cp, kubeconfig, nil
}

func (s *State) createObjects(ctx context.Context, c client.Client) error {
	// Its VM pods name their ports (netshift.io/port-spec): the lab, as the
	// cluster's admin, opts it in; each port is listed as the lab creates it.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PodNamespace,
		Labels: map[string]string{plug.PortSpecOptInLabel: plug.PortSpecEnabled}}}); err != nil {
		return err
	}
	// The operator reaches the central OVN databases over SSL with this Secret's certificate.
	if s.Options.OVN {
		if err := s.createOVNSecret(ctx, c); err != nil {
			return err
		}
	}
	if s.Options.Neutron {
		if err := s.createNeutronObjects(ctx, c); err != nil {
			return err
		}
	}
	// The nodes register themselves (their kubelets), with the lab's labels.
	// The layout the lab built is the wish: a lab never starts moving zones by itself.
	if mode := map[string]zones.Mode{ZonesSingle: zones.Single, ZonesMulti: zones.Multi}[s.Options.Zones]; mode != "" {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: zones.ConfigMapName},
			Data: map[string]string{zones.KeyZoneMode: string(mode), zones.KeyDefinitive: "yes"}}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("ConfigMap %s: %w", zones.ConfigMapName, err)
		}
	}
	if s.Options.WithoutNetshift {
		return nil // netshift creates its NetshiftNetwork from what its agents find, once installed
	}
	mtu, under := int32(s.Options.MTU), int32(s.Options.UnderlayMTU)
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName},
		Spec: v1alpha1.NetshiftNetworkSpec{MTU: &mtu, Encapsulation: s.Options.Tunnel,
			Underlay: v1alpha1.UnderlaySettings{MTU: under}}}
	if err := c.Create(ctx, cn); err != nil {
		return fmt.Errorf("NetshiftNetwork: %w", err)
	}
	// What the lab built is what is applied; recording it here means an edit made before the
	// operator's first look is still a change, not the starting point.
	cn.Status.Applied = &v1alpha1.AppliedNetwork{MTU: mtu, VXLANPort: cn.Spec.VXLANPort, GenevePort: cn.Spec.GenevePort}
	if err := c.Status().Update(ctx, cn); err != nil {
		return fmt.Errorf("NetshiftNetwork status: %w", err)
	}
	return nil
}

// ChildrenOf lists the processes whose parent is pid (the supervisor's, and a scale run's API server and etcd).
func ChildrenOf(pid int) []Process {
	entries, _ := os.ReadDir("/proc")
	var out []Process
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			if p, err := Identify("", child); err == nil {
				p.Role = p.Comm
				out = append(out, p)
			}
		}
	}
	return out
}
