package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/lab/kubenode"
)

// TestQuickStart follows docs/install.md's quick start on a cluster that
// runs without netshift (its network plugin writing a .conf, as
// OVN-Kubernetes does): kubectl apply -k of the install, the NetshiftNetwork
// netshift creates from what the nodes report, a dry run that changes
// nothing, the change, `netshift status`, and `netshift uninstall`, which
// leaves no netshift file or CNI entry on any node and no netshift object.
func TestQuickStart(t *testing.T) {
	const name = "e2eqs"
	up(t, name, "--nodes", "2", "--pods-per-node", "1", "--cni-conf", "--without-netshift")
	s, err := lab.LoadState(name)
	if err != nil {
		t.Fatal(err)
	}
	c := labClient(t, name)
	ctx := context.Background()
	kubeconfig := "--kubeconfig=" + s.Kubeconfig
	before := nodeCNIFiles(t, s)
	if len(before) != 2 || before["node-1/10-lab.conf"] == "" || before["node-2/10-lab.conf"] == "" {
		t.Fatalf("the nodes' CNI files before the install: %v; want each node's plugin .conf alone", sortedKeys(before))
	}

	// kubectl apply -k config/default (the lab's overlay of it: the lab's image).
	assets, err := controlplane.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(assets, "kubectl"), kubeconfig, "apply", "-k", s.Path("config", "lab")).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}
	var cn v1alpha1.NetshiftNetwork
	waitForWithin(t, "netshift to create the NetshiftNetwork from the nodes' reports", 3*time.Minute, func() bool {
		return c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn) == nil && cn.Status.Applied != nil
	})
	if *cn.Spec.MTU != 1450 || cn.Spec.Encapsulation != v1alpha1.EncapVXLAN || cn.Spec.VXLANPort != 4789 {
		t.Fatalf("NetshiftNetwork created as %+v; want MTU 1450 over VXLAN 4789, as the lab's nodes are", cn.Spec)
	}
	waitForWithin(t, "every agent ready (netshift-cni chained)", 2*time.Minute, func() bool {
		var pods corev1.PodList
		_ = c.List(ctx, &pods, client.InNamespace("netshift-system"), client.MatchingLabels{"app.kubernetes.io/name": "netshift-agent"})
		ready := 0
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 2
	})
	netshiftCNIChained(t, s)

	// netshift change mtu 1350 --dry-run: every node checks, nothing changes.
	out := mustNetshift(t, "change", "mtu", "1350", "--dry-run", kubeconfig)
	for _, want := range []string{"checked on 2 nodes (nothing was changed)", "node-1", "node-2", "pods' eth0"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run's report lacks %q:\n%s", want, out)
		}
	}
	_ = c.Get(ctx, client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &cn)
	if *cn.Spec.MTU != 1450 || cn.Spec.DryRun != nil || cn.Status.Applied.MTU != 1450 {
		t.Fatalf("after the dry run: spec MTU %d, dryRun %+v, applied %d; want 1450, none, 1450", *cn.Spec.MTU, cn.Spec.DryRun, cn.Status.Applied.MTU)
	}
	pods, err := s.Pods(ctx)
	if err != nil || len(pods) != 2 {
		t.Fatalf("the lab's pods: %v, %v", pods, err)
	}
	for _, p := range pods {
		if m := podMTU(t, p); m != 1450 {
			t.Errorf("pod %s: MTU %d after a dry run, want 1450", p.Name, m)
		}
	}

	// netshift change mtu 1350, followed to its end; netshift status.
	out = mustNetshift(t, "change", "mtu", "1350", kubeconfig)
	if !strings.Contains(out, "Succeeded") {
		t.Errorf("the change's progress does not end Succeeded:\n%s", out)
	}
	for _, p := range pods {
		if m := podMTU(t, p); m != 1350 {
			t.Errorf("pod %s: MTU %d after the change, want 1350", p.Name, m)
		}
	}
	if out, err := netshift(t, "status", kubeconfig); err != nil || !strings.Contains(out, "mtu 1350") {
		t.Errorf("netshift status: %v\n%s", err, out)
	}

	// netshift uninstall: nothing of netshift's left on any node or in the cluster.
	out = mustNetshift(t, "uninstall", kubeconfig)
	if !strings.Contains(out, "2/2 nodes clean") || !strings.Contains(out, "netshift is uninstalled") {
		t.Errorf("netshift uninstall said:\n%s", out)
	}
	if after := nodeCNIFiles(t, s); !maps.Equal(before, after) {
		t.Errorf("the nodes' CNI files after uninstall differ from before the install:\nbefore %v\nafter  %v", before, after)
	}
	layout, _ := kubenode.ParseLayout(s.Options.Layout)
	for _, n := range s.Topology.Nodes {
		for _, dir := range []string{"/var/lib/netshift", layout.CNIBinDir} {
			path, _ := s.NodeFile(n.Name, dir)
			entries, _ := os.ReadDir(path)
			for _, e := range entries {
				if dir == "/var/lib/netshift" || e.Name() == cni.PluginName {
					t.Errorf("node %s: %s/%s left after uninstall", n.Name, dir, e.Name())
				}
			}
		}
	}
	waitForWithin(t, "netshift's CRDs and namespace gone", 2*time.Minute, func() bool {
		var crds apiextensionsv1.CustomResourceDefinitionList
		var ns corev1.Namespace
		_ = c.List(ctx, &crds)
		for _, crd := range crds.Items {
			if crd.Spec.Group == v1alpha1.GroupVersion.Group {
				return false
			}
		}
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "netshift-system"}, &ns))
	})
}

// nodeCNIFiles reads every node's CNI configuration files: name -> content
// as JSON (re-encoded, so that key order does not count).
func nodeCNIFiles(t *testing.T, s *lab.State) map[string]string {
	t.Helper()
	layout, _ := kubenode.ParseLayout(s.Options.Layout)
	files := map[string]string{}
	for _, n := range s.Topology.Nodes {
		dir, err := s.NodeFile(n.Name, layout.CNIConfDir)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				files[n.Name+"/"+e.Name()+"/"] = "directory"
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if json.Unmarshal(data, &v) == nil {
				data, _ = json.Marshal(v)
			}
			if strings.Contains(string(data), cni.PluginName) {
				files[n.Name+"/"+e.Name()] = "names netshift-cni: " + string(data)
			} else {
				files[n.Name+"/"+e.Name()] = string(data)
			}
		}
	}
	return files
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
