package cri

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func sandboxStatus(state runtimeapi.PodSandboxState, network runtimeapi.NamespaceMode) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{Id: "0123456789abcdef", State: state,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "u1"},
		Linux:    &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: network}}}}
}

const containerdInfo = `{"pid":4242,"netNamespaceClosed":false,"cniResult":{"Interfaces":{
  "lo":{"IPConfigs":[{"IP":"127.0.0.1"}],"Sandbox":"/run/containerd/netns/cni-1"},
  "eth0":{"IPConfigs":[{"IP":"198.18.1.5"}],"Mac":"0a:58:00:00:00:01","Sandbox":"/run/containerd/netns/cni-1"},
  "net1":{"Sandbox":"/run/containerd/netns/cni-1"},
  "vethabc":{"Mac":"aa:bb:cc:dd:ee:ff","Sandbox":""}}}}`

func TestParseSandbox(t *testing.T) {
	ready, pod := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.NamespaceMode_POD
	s, ok, err := ParseSandbox(sandboxStatus(ready, pod), map[string]string{"info": containerdInfo})
	if err != nil || !ok {
		t.Fatalf("ParseSandbox: %v, ok %v", err, ok)
	}
	if s.String() != "shop/web" || s.UID != "u1" || s.Pid != 4242 || strings.Join(s.PodInterfaces, ",") != "eth0,net1" || strings.Join(s.HostInterfaces, ",") != "vethabc" {
		t.Fatalf("sandbox %+v", s)
	}

	for name, c := range map[string]struct {
		st   *runtimeapi.PodSandboxStatus
		info map[string]string
		ok   bool
		err  string
	}{
		"not ready":       {sandboxStatus(runtimeapi.PodSandboxState_SANDBOX_NOTREADY, pod), nil, false, ""},
		"host network":    {sandboxStatus(ready, runtimeapi.NamespaceMode_NODE), nil, false, ""},
		"netns closed":    {sandboxStatus(ready, pod), map[string]string{"info": `{"pid":7,"netNamespaceClosed":true}`}, false, ""},
		"no verbose info": {sandboxStatus(ready, pod), nil, false, `sandbox 0123456789abcdef of pod shop/web: the runtime gave no verbose information`},
		"garbled info":    {sandboxStatus(ready, pod), map[string]string{"info": `{`}, false, "verbose information"},
		"no process":      {sandboxStatus(ready, pod), map[string]string{"info": `{"pid":0}`}, false, "no process holds it (pid 0)"},
		"no metadata":     {&runtimeapi.PodSandboxStatus{Id: "x"}, nil, false, "sandbox without metadata"},
	} {
		_, ok, err := ParseSandbox(c.st, c.info)
		if ok != c.ok || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: ok %v, err %v; want ok %v, err containing %q", name, ok, err, c.ok, c.err)
		}
	}
}

func TestNetnsPathChecksTheProcessIsTheSandboxs(t *testing.T) {
	root := t.TempDir()
	write := func(pid, cgroup string) {
		t.Helper()
		if err := mkfile(root+"/"+pid+"/cgroup", cgroup); err != nil {
			t.Fatal(err)
		}
	}
	write("4242", "4:memory:/lab-node-1/kubepods/besteffort/podu1/0123456789abcdef\n")
	write("4343", "4:memory:/user.slice\n")
	s := Sandbox{ID: "0123456789abcdef", Namespace: "shop", Name: "web", Pid: 4242}
	if p, err := s.NetnsPath(root); err != nil || p != root+"/4242/ns/net" {
		t.Fatalf("NetnsPath = %q, %v", p, err)
	}
	s.Pid = 4343
	if _, err := s.NetnsPath(root); err == nil || err.Error() != "pod shop/web: process 4343 is no longer sandbox 0123456789abc" {
		t.Fatalf("a reused pid: %v", err)
	}
	s.Pid = 4444
	if _, err := s.NetnsPath(root); err == nil || !strings.Contains(err.Error(), "sandbox process 4444") {
		t.Fatalf("a gone pid: %v", err)
	}
}

func mkfile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
