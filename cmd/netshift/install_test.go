package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"netshift.io/netshift/internal/manifests"
	"netshift.io/netshift/internal/testenv"
)

// workloads renders a kustomization with kubectl, as a user applies it, and
// returns the operator's and the agent's containers.
func workloads(t *testing.T, dir string) (operator appsv1.Deployment, agent appsv1.DaemonSet) {
	t.Helper()
	out, err := exec.Command(filepath.Join(env.AssetsDir, "kubectl"), "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	objs, err := manifests.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && o.GetName() == "netshift-operator":
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &operator)
		case o.GetKind() == "DaemonSet" && o.GetName() == "netshift-agent":
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &agent)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return operator, agent
}

// overlay writes a user's kustomization: base plus components, all under config/.
func overlay(t *testing.T, base string, components ...string) string {
	t.Helper()
	root, err := filepath.Abs("../../config")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// kustomize takes no absolute base.
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "resources:\n- " + rel(base) + "\n"
	if len(components) > 0 {
		k += "components:\n"
		for _, c := range components {
			k += "- " + rel(filepath.Join("components", c)) + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Every overlay and component netshift ships adds to the base's arguments and
// never drops one (the port pools' overlay once replaced the operator's list
// and lost its clock endpoint); the runtime components move the agent's CRI
// socket and CNI directories, each host path mounted at the same path.
func TestOverlaysAddToTheBase(t *testing.T) {
	testenv.Require(t, envMissing)
	baseOp, baseAgent := workloads(t, "../../config/default")
	replaced := map[string]bool{"--reboot-command": true, "--cri-endpoint": true, "--cni-conf-dir": true, "--cni-bin-dir": true}
	for _, c := range []struct {
		name, dir               string
		socket, confDir, binDir string
	}{
		{"portpools", "../../config/portpools", "/run/containerd/containerd.sock", "/etc/cni/net.d", "/opt/cni/bin"},
		{"ovn-zones", "../../config/ovn-zones", "/run/containerd/containerd.sock", "/etc/cni/net.d", "/opt/cni/bin"},
		{"ovn-kubernetes", "../../config/ovn-kubernetes", "/run/containerd/containerd.sock", "/etc/cni/net.d", "/opt/cni/bin"},
		{"lab-neutron", "../../config/lab-neutron", "/run/containerd/containerd.sock", "/etc/cni/net.d", "/opt/cni/bin"},
		{"portpools+crio", overlay(t, "portpools", "runtime-crio"), "/run/crio/crio.sock", "/etc/cni/net.d", "/opt/cni/bin"},
		{"default+k3s", overlay(t, "default", "runtime-k3s"), "/run/k3s/containerd/containerd.sock",
			"/var/lib/rancher/k3s/agent/etc/cni/net.d", "/var/lib/rancher/k3s/data/cni"},
	} {
		t.Run(c.name, func(t *testing.T) {
			op, agent := workloads(t, c.dir)
			for _, a := range baseOp.Spec.Template.Spec.Containers[0].Args {
				if !slices.Contains(op.Spec.Template.Spec.Containers[0].Args, a) {
					t.Errorf("the operator lost %q: %q", a, op.Spec.Template.Spec.Containers[0].Args)
				}
			}
			args := agent.Spec.Template.Spec.Containers[0].Args
			for _, a := range baseAgent.Spec.Template.Spec.Containers[0].Args {
				if flag, _, _ := strings.Cut(a, "="); !replaced[flag] && !slices.Contains(args, a) {
					t.Errorf("the agent lost %q: %q", a, args)
				}
			}
			for _, want := range []string{"--cri-endpoint=unix://" + c.socket, "--cni-conf-dir=" + c.confDir, "--cni-bin-dir=" + c.binDir} {
				if !slices.Contains(args, want) {
					t.Errorf("the agent's arguments lack %q: %q", want, args)
				}
			}
			mounts := map[string]string{}
			for _, m := range agent.Spec.Template.Spec.Containers[0].VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			for _, v := range agent.Spec.Template.Spec.Volumes {
				if v.HostPath != nil && v.Name != "node-kubeconfig" && mounts[v.Name] != v.HostPath.Path {
					t.Errorf("volume %s: host path %s mounted at %s: what the agent writes into the CNI configuration would name the wrong file",
						v.Name, v.HostPath.Path, mounts[v.Name])
				}
			}
			for name, path := range map[string]string{"cri-socket-dir": filepath.Dir(c.socket), "cni-conf": c.confDir, "cni-bin": c.binDir} {
				if mounts[name] != path {
					t.Errorf("volume %s mounted at %q, want %q", name, mounts[name], path)
				}
			}
		})
	}
}
