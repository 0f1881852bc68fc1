package cni

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/nodeconfig"
	"netshift.io/netshift/internal/plug"
)

func podWith(uid, node string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "u1", Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node}}
}

func TestAssignmentOf(t *testing.T) {
	want := podRef{Namespace: "shop", Name: "web-1", UID: "u1"}
	record := map[string]string{plug.PoolAnnotation: `{"id":"port-1","mac":"fa:16:3e:00:00:01","pool":"k"}`}
	if a, done, err := assignmentOf(podWith("u1", "worker-1", record), want, "worker-1"); err != nil || !done || a.ID != "port-1" {
		t.Fatalf("the operator's record: %+v %v %v", a, done, err)
	}
	if _, done, err := assignmentOf(podWith("u1", "worker-1", nil), want, "worker-1"); err != nil || done {
		t.Fatalf("no record yet: done %v, %v; want to wait", done, err)
	}
	replaced := podWith("u1", "worker-1", record)
	replaced.UID = "u2"
	if _, _, err := assignmentOf(replaced, want, "worker-1"); err == nil || !strings.Contains(err.Error(), "it is now UID u2, this sandbox is for UID u1") {
		t.Errorf("a pod of the same name, another UID: %v", err)
	}
	deleting := podWith("u1", "worker-1", record)
	deleting.DeletionTimestamp = &metav1.Time{}
	if _, _, err := assignmentOf(deleting, want, "worker-1"); err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("a pod being deleted: %v", err)
	}
	if _, _, err := assignmentOf(podWith("u1", "worker-2", record), want, "worker-1"); err == nil || !strings.Contains(err.Error(), `bound to node "worker-2", not to this node worker-1`) {
		t.Errorf("a pod of another node: %v", err)
	}
	bad := map[string]string{plug.PoolAnnotation: `{"mac":"x"}`}
	if _, _, err := assignmentOf(podWith("u1", "worker-1", bad), want, "worker-1"); err == nil || !strings.Contains(err.Error(), "not a port assignment") {
		t.Errorf("an unreadable record: %v", err)
	}
}

func TestWaitStateQuotesTheOperator(t *testing.T) {
	p := podWith("u1", "worker-1", nil)
	if got := waitState(p); !strings.Contains(got, "has said nothing of this pod's port") {
		t.Errorf("no condition: %s", got)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: v1alpha1.PodPortAssigned, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonPoolNotReady,
		Message: "pool p/n/host=worker-1/sg: 0 ready, 10 being created"}}
	if got := waitState(p); got != "the operator says PoolNotReady: pool p/n/host=worker-1/sg: 0 ready, 10 being created" {
		t.Errorf("with the operator's condition: %s", got)
	}
}

func TestPodMTU(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "absent.json")
	if got := podMTU(1442, 1400, none); got != 1442 {
		t.Errorf("the network's MTU without a node configuration: %d", got)
	}
	if got := podMTU(0, 1400, none); got != 1400 {
		t.Errorf("nothing known but the configured MTU: %d", got)
	}
	node := filepath.Join(dir, "network.json")
	if err := nodeconfig.Write(node, nodeconfig.File{NodeNetworkConfig: v1alpha1.NodeNetworkConfig{MTU: 1350, Encapsulation: "vxlan", TunnelPort: 4789}}); err != nil {
		t.Fatal(err)
	}
	if got := podMTU(1442, 1400, node); got != 1350 {
		t.Errorf("a node configuration below the network's: %d", got)
	}
	if got := podMTU(1300, 1400, node); got != 1300 {
		t.Errorf("a network below the node's configuration: %d", got)
	}
}

func TestUsesPools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pool-namespaces.json")
	if ok, err := usesPools(path, "shop"); ok || err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("no list: %v %v; want no pod wired, and the missing file named", ok, err)
	}
	if err := WritePoolNamespaces(path, []string{"shop", "bank", "shop"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"namespaces":["bank","shop"]}`+"\n" {
		t.Errorf("list %s: sorted, once each", data)
	}
	for ns, want := range map[string]bool{"shop": true, "bank": true, "web": false} {
		if ok, err := usesPools(path, ns); ok != want || err != nil {
			t.Errorf("usesPools(%s) = %v, %v", ns, ok, err)
		}
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := usesPools(path, "shop"); err == nil {
		t.Error("an unreadable list was taken for none")
	}
}

func TestPoolConfigNamesTheField(t *testing.T) {
	base := `{"cniVersion":"1.0.0","name":"pods","type":"netshift-cni","pool":{"node":"w1","kubeconfig":"/k","namespaces":"/n","stateDir":"/s",` +
		`"ovsdb":"unix:/db","bridge":"br-int","plugMode":"per-port","delegate":{"type":"ovn-k8s-cni-overlay"}%s}}`
	if c, err := ParseConfig([]byte(strings.Replace(base, "%s", "", 1))); err != nil || c.Pool.portWait != MaxPortWait {
		t.Fatalf("a good pool section: %v (wait %v)", err, c.Pool)
	}
	for extra, want := range map[string]string{
		`,"portWait":"31s"`:                   `pool.portWait "31s": want a duration above 0 and at most 30s`,
		`,"portWait":"0s"`:                    `pool.portWait "0s"`,
		`,"mtu":100`:                          "pool.mtu 100: want 0 (unset) or 576..9216",
		`,"parkedDevices":-1`:                 "pool.parkedDevices -1: want 0 (none kept) to 256",
		`,"parkedDevices":257`:                "pool.parkedDevices 257: want 0 (none kept) to 256",
		`,"plugMode":"sideways"`:              `pool.plugMode "sideways": want per-port or direct`,
		`,"delegate":{"type":"netshift-cni"}`: "pool.delegate: want the network plugin's entry",
		`,"delegate":{"type":""}`:             "pool.delegate",
		`,"node":""`:                          "pool: [node] required",
		`,"stateDir":"","kubeconfig":""`:      "pool: [kubeconfig stateDir] required",
	} {
		if _, err := ParseConfig([]byte(strings.Replace(base, "%s", extra, 1))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pool with %s: %v, want %q", extra, err, want)
		}
	}
}

// TestAnOlderSandboxLeavesTheNewerOnesPort: the DEL of a pod's older
// sandbox, coming after its newer sandbox was wired to the same port, must
// not unplug the port or remove the node end the newer one uses.
func TestAnOlderSandboxLeavesTheNewerOnesPort(t *testing.T) {
	dir := t.TempDir()
	netns := filepath.Join(t.TempDir(), "cni-1") // a sandbox's namespace, as long as it lives
	if err := os.WriteFile(netns, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := sandboxState{Pod: "shop/web-1", PortID: "port-1", Mode: plug.PerPort, Tap: "tapport-1", Netns: netns}
	if err := writeState(dir, "old", st); err != nil {
		t.Fatal(err)
	}
	if held, err := otherSandboxHolds(dir, "old", st); err != nil || held {
		t.Fatalf("alone: %v %v", held, err)
	}
	if err := writeState(dir, "other-pod", sandboxState{Pod: "shop/web-2", PortID: "port-2", Netns: netns}); err != nil {
		t.Fatal(err)
	}
	if held, _ := otherSandboxHolds(dir, "old", st); held {
		t.Fatal("another pod's sandbox was taken for a newer sandbox of this pod")
	}
	if err := writeState(dir, "new", st); err != nil {
		t.Fatal(err)
	}
	if held, err := otherSandboxHolds(dir, "old", st); err != nil || !held {
		t.Fatalf("with a newer sandbox on the same port: %v %v", held, err)
	}
	// After a reboot the sandboxes of the last boot are gone with their namespaces, and nobody
	// asks their DEL: their records neither hold the port nor stay.
	rebooted := st
	rebooted.Netns = filepath.Join(t.TempDir(), "gone")
	if err := writeState(dir, "before-reboot", rebooted); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(statePath(dir, "new")); err != nil {
		t.Fatal(err)
	}
	if held, err := otherSandboxHolds(dir, "old", st); err != nil || held {
		t.Fatalf("a sandbox of the last boot: held %v, %v", held, err)
	}
	if _, err := os.Stat(statePath(dir, "before-reboot")); !os.IsNotExist(err) {
		t.Fatalf("the last boot's record is still there: %v", err)
	}
}
