package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/manifests"
	"netshift.io/netshift/internal/testenv"
)

var (
	env        *testenv.Env
	envMissing error
	// binary is the product build, labBinary the lab build (-tags lab).
	binary, labBinary string
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests returns instead of exiting so that its deferred clean-up runs.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "netshift-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary, labBinary = filepath.Join(dir, "netshift"), filepath.Join(dir, "netshift-lab")
	for _, build := range [][]string{{"-o", binary}, {"-tags", "lab", "-o", labBinary}} {
		if out, err := exec.Command("go", append(append([]string{"build"}, build...), ".")...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %v: %v\n%s", build, err, out)
			return 1
		}
	}
	return testenv.Run(m, &env, &envMissing)
}

// runBin runs the product build as a process.
func runBin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	return string(out), err
}

// runLab runs the lab build.
func runLab(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(labBinary, args...).CombinedOutput()
	return string(out), err
}

// TestProductBuildCarriesNoLab: the binary users install has no lab, demo,
// benchmark or test hook, not even as dead code.
func TestProductBuildCarriesNoLab(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lab", "up"}, `unknown command "lab"`},
		{[]string{"demo"}, `unknown command "demo"`},
		{[]string{"lab-reboot"}, `unknown command "lab-reboot"`},
		{[]string{"portpool", "bench", "--neutron-url", "http://127.0.0.1:1"}, "unknown flag: --neutron-url"},
		{[]string{"agent", "--node", "n1", "--fail-step-once", "HostVethMTU"}, "unknown flag: --fail-step-once"},
		{[]string{"agent", "--node", "n1", "--clock-offset", "200ms"}, "unknown flag: --clock-offset"},
	} {
		out, err := runBin(t, c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("netshift %s: err %v, output %q; want %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if !strings.HasPrefix(pkg, "netshift.io/") {
			continue
		}
		for _, forbidden := range []string{"/lab", "/demo", "bench", "/kubesim", "/controlplane", "/testenv", "/images"} {
			if strings.Contains(pkg, forbidden) {
				t.Errorf("the product build depends on %s", pkg)
			}
		}
	}
}

const samples = "../../config/samples/"

// TestPlanExample is the example through the command users run.
func TestPlanExample(t *testing.T) {
	out, err := runBin(t, "plan", "--nodes", samples+"example-nodes.yaml", "--pools", samples+"example-pools.yaml", "--only", "c,d,e", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var p struct {
		Owners map[string]string `json:"owners"`
		Waves  [][]string        `json:"waves"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := map[string]string{"a": "pool1", "b": "pool1", "c": "pool1", "d": "pool2", "e": "pool2"}; !reflect.DeepEqual(p.Owners, want) {
		t.Errorf("owners = %v, want %v", p.Owners, want)
	}
	if want := [][]string{{"c", "d", "e"}}; !reflect.DeepEqual(p.Waves, want) {
		t.Errorf("waves = %v, want %v", p.Waves, want)
	}
	out, err = runBin(t, "plan", "--nodes", samples+"example-nodes.yaml", "--pools", samples+"example-pools.yaml")
	if err != nil || !strings.Contains(out, "1: a, d, e\n  2: b\n  3: c") {
		t.Errorf("text plan without --only:\n%s (%v)", out, err)
	}
}

// TestCLIRefusesBadInput: every refusal names the flag or argument and exits
// 2 (bad usage or input), but a pool API that cannot be reached (1).
func TestCLIRefusesBadInput(t *testing.T) {
	plusPercentPool := filepath.Join(t.TempDir(), "pools.yaml")
	if err := os.WriteFile(plusPercentPool, []byte("apiVersion: netshift.io/v1alpha1\nkind: NetshiftNodePool\nmetadata: {name: p}\nspec: {maxParallel: \"+50%\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := writeKubeconfig(t, "https://127.0.0.1:1", "a", "b")
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"plan", "--nodes", samples + "example-nodes.yaml", "--pools", samples + "example-pools.yaml", "-o", "xml"},
			`invalid argument "xml" for "-o, --output" flag: want text, json or yaml`, exitUsage},
		{[]string{"status", "-o", "wide"}, `invalid argument "wide" for "-o, --output" flag: want text, json or yaml`, exitUsage},
		{[]string{"version", "-o", "xml"}, `invalid argument "xml" for "-o, --output" flag: want text, json or yaml`, exitUsage},
		{[]string{"--kubeconfig", kubeconfig, "--context", "nope", "status"}, `--context: "nope" is not a context of the kubeconfig (its contexts: a, b)`, exitUsage},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "status"}, "--kubeconfig /nonexistent/kubeconfig: ", exitUsage},
		{[]string{"status", "extra"}, `unknown command "extra" for "netshift status"`, exitUsage},
		{[]string{"nope"}, `unknown command "nope" for "netshift"`, exitUsage},
		{[]string{"status", "--bogus"}, "unknown flag: --bogus", exitUsage},
		{[]string{"status", "-w", "soon"}, `invalid argument "soon" for "-w, --watch" flag`, exitUsage},
		{[]string{"portpool", "populate", "p/n/host=w/sg"}, "accepts 2 arg(s), received 1", exitUsage},
		{[]string{"plan", "--nodes", samples + "example-nodes.yaml", "--pools", samples + "example-pools.yaml", "--only", "c,zz"}, "no such node: zz", exitUsage},
		{[]string{"plan", "--nodes", samples + "example-nodes.yaml"}, "--nodes and --pools go together", exitUsage},
		{[]string{"plan", "--nodes", samples + "example-pools.yaml", "--pools", samples + "example-pools.yaml"}, `kind "NetshiftNodePool", want Node`, exitUsage},
		{[]string{"agent"}, "--node: required", exitUsage},
		{[]string{"agent", "--node", "n1", "--cni-trunk-bridge", "br-trunk"}, "--cni-trunk-bridge: goes with --cni-port-pools", exitUsage},
		{[]string{"agent", "--node", "n1", "--cni-parked-devices", "4"}, "--cni-parked-devices: goes with --cni-port-pools", exitUsage},
		{[]string{"agent", "--node", "n1", "--cni-port-pools", "--cni-parked-devices", "300"}, "--cni-parked-devices 300: want 0 (none kept) to 256", exitUsage},
		{[]string{"agent", "--node", "n1", "--cni-port-pools", "--cni-parked-ttl", "0s"}, "--cni-parked-ttl 0s: want 1s to 24h", exitUsage},
		{[]string{"reconfigure"}, "either --nodes or --all", exitUsage},
		{[]string{"operator", "--port-pools", "--neutron-url", "http://127.0.0.1:1", "--pool-batch", "0"}, "--pool-batch: 0 is out of range 1..500", exitUsage},
		{[]string{"operator", "--port-pools", "--neutron-url", "http://127.0.0.1:1", "--pool-min-ready", "9", "--pool-max-size", "3"},
			"--pool-max-size: 3 is below --pool-min-ready (9)", exitUsage},
		{[]string{"operator", "--port-pools"}, "give --neutron-url (no auth) or --os-clouds-file and --os-cloud", exitUsage},
		{[]string{"operator", "--port-pools", "--neutron-url", "http://127.0.0.1:1", "--portpool-api", "tcp:127.0.0.1:9"}, "--portpool-api: tcp:... is served with TLS only", exitUsage},
		{[]string{"portpool", "show", "p/n/worker-1/sg"}, `third part "worker-1": want host=NODE or trunk=PORT`, exitUsage},
		{[]string{"portpool", "populate", "p/n/host=w/sg", "0"}, `COUNT: "0" is not a number in 1..10000`, exitUsage},
		{[]string{"portpool", "list", "--server", "/nonexistent/portpool.sock"}, "is the operator running with port pools", exitFailed},
		{[]string{"portpool", "populate", "p/n/host=w/sg", "10abc"}, `COUNT: "10abc" is not a number in 1..10000`, exitUsage},
		{[]string{"reconfigure", "--nodes", ","}, `--nodes: "," names no node`, exitUsage},
		{[]string{"plan", "--nodes", samples + "example-nodes.yaml", "--pools", plusPercentPool}, `spec.maxParallel: "+50%" is not a count`, exitUsage},
		{[]string{"operator", "--change-lead", "-1s"}, "--change-lead: -1s is outside 500ms..10m0s", exitUsage},
		{[]string{"operator", "--step-spacing", "0"}, "--step-spacing: 0s is outside 1ms..10s", exitUsage},
		{[]string{"operator", "--agent-write-spacing", "1s"}, "--agent-write-spacing: 1s is outside 1ms..100ms", exitUsage},
		{[]string{"lab", "up", "--nodes", "0"}, "--nodes: 0 is outside 1..50", exitUsage},
		{[]string{"lab", "up", "--mtu", "0"}, "--mtu: 0 is not a pod MTU", exitUsage},
		{[]string{"demo", "--hold", "2h"}, "--hold: 2h0m0s is outside 0s..1m", exitUsage},
		{[]string{"portpool", "bench"}, "--neutron-url: required", exitUsage},
		{[]string{"portpool", "bench", "--neutron-url", "http://127.0.0.1:1", "--pods", "5"}, "--pods: 5 is out of range 10..100000", exitUsage},
	} {
		runner := runBin
		if c.args[0] == "demo" || c.args[0] == "lab" || c.args[0] == "portpool" && c.args[1] == "bench" {
			runner = runLab // lab-build commands
		}
		out, err := runner(t, c.args...)
		if code := exitCodeOf(err); code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("netshift %s: exit %d, output %q; want exit %d and an error saying %q", strings.Join(c.args, " "), code, out, c.code, c.want)
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func start(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, args...)
	logf, _ := os.Create(filepath.Join(t.TempDir(), "log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("netshift %s log:\n%s", args[0], b)
		}
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOperatorAndAgentProcesses runs `netshift operator` and `netshift agent`
// as processes with their own certificate identities, as a deployment would:
// leader election, health and metrics endpoints, a reconfigure through the
// CLI, and `netshift status -o json`.
func TestOperatorAndAgentProcesses(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	dir := t.TempDir()
	opKC, err := env.UserKubeconfig(dir, "netshift:operator", "netshift:operators")
	if err != nil {
		t.Fatal(err)
	}
	agentKC, err := env.UserKubeconfig(dir, "netshift:agent:cli-1", "netshift:agents")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cli-1"}}); err != nil {
		t.Fatal(err)
	}
	metrics, health := freePort(t), freePort(t)
	start(t, "operator", "--kubeconfig", opKC, "--leader-elect", "--metrics-bind-address", metrics, "--health-probe-bind-address", health)
	start(t, "agent", "--kubeconfig", agentKC, "--node", "cli-1", "--reconfigure-hold", "100ms")

	eventually(t, "/healthz and /readyz", func() bool {
		a, _ := get("http://" + health + "/healthz")
		b, _ := get("http://" + health + "/readyz")
		return a == 200 && b == 200
	})
	eventually(t, "the leader lease", func() bool {
		var lease coordinationv1.Lease
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "netshift-system", Name: "netshift-operator"}, &lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})
	var nns v1alpha1.NetshiftNodeState
	eventually(t, "the NetshiftNodeState of cli-1", func() bool {
		return env.Client.Get(ctx, client.ObjectKey{Name: "cli-1"}, &nns) == nil
	})
	out, err := runBin(t, "--kubeconfig", env.Kubeconfig, "reconfigure", "--nodes", "cli-1,nope")
	if err == nil || !strings.Contains(out, "node nope") {
		t.Fatalf("reconfigure with an unknown node: %v %s", err, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "cli-1"}, &nns); err != nil || nns.Spec.Operation != nil {
		t.Fatalf("a refused reconfigure changed cli-1: %+v %v", nns.Spec.Operation, err)
	}
	if out, err := runBin(t, "--kubeconfig", env.Kubeconfig, "reconfigure", "--nodes", "cli-1", "--id", "cli-op"); err != nil {
		t.Fatalf("reconfigure: %v\n%s", err, out)
	}
	eventually(t, "netshift status to show the operation done", func() bool {
		out, err := runBin(t, "--kubeconfig", env.Kubeconfig, "status", "-o", "json")
		if err != nil {
			return false
		}
		var r struct {
			Pools []struct {
				Name  string `json:"name"`
				Nodes []struct {
					Name, DrainStatus, SyncStatus, Operation string
				} `json:"nodes"`
			} `json:"pools"`
		}
		if json.Unmarshal([]byte(out), &r) != nil || len(r.Pools) != 1 || r.Pools[0].Name != "default" || len(r.Pools[0].Nodes) != 1 {
			return false
		}
		n := r.Pools[0].Nodes[0]
		return n.Name == "cli-1" && n.SyncStatus == "Succeeded" && n.DrainStatus == "Idle" && n.Operation == "cli-op"
	})
	// The same ID again would be taken as done and do nothing: refused, nothing written.
	if out, err := runBin(t, "--kubeconfig", env.Kubeconfig, "reconfigure", "--nodes", "cli-1", "--id", "cli-op"); err == nil ||
		!strings.Contains(out, "--id: operation cli-op was already started on node cli-1") {
		t.Errorf("reconfigure with a used ID: %v\n%s", err, out)
	}
	code, body := get("http://" + metrics + "/metrics")
	for _, m := range []string{"netshift_drain_nodes_draining{pool=\"default\"} 0", "netshift_drain_duration_seconds_count{pool=\"default\"} 1"} {
		if code != 200 || !strings.Contains(body, m) {
			t.Errorf("metrics endpoint (%d) lacks %q", code, m)
		}
	}
	text, err := runBin(t, "--kubeconfig", env.Kubeconfig, "status")
	if err != nil || !strings.Contains(text, "POOL default") || !strings.Contains(text, "cli-1") {
		t.Errorf("status text:\n%s (%v)", text, err)
	}
}

// TestManifestsApplyCleanly applies config/default (CRDs, RBAC, policy, the
// operator Deployment, the agent DaemonSet) with kubectl, as users do.
func TestManifestsApplyCleanly(t *testing.T) {
	testenv.Require(t, envMissing)
	kubectl := filepath.Join(env.AssetsDir, "kubectl")
	out, err := exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "--force-conflicts", "-k", "../../config/default").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k config/default: %v\n%s", err, out)
	}
	for _, want := range []string{"deployment.apps/netshift-operator", "daemonset.apps/netshift-agent", "validatingadmissionpolicy.admissionregistration.k8s.io/netshift-agent-own-node",
		"flowschema.flowcontrol.apiserver.k8s.io/netshift-agents", "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/netshift-agents", "customresourcedefinition.apiextensions.k8s.io/netshiftnodepools.netshift.io"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl output lacks %s:\n%s", want, out)
		}
	}
	// The port pool overlay: the same objects, the operator with the pools and its credentials.
	out, err = exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "--force-conflicts", "-k", "../../config/portpools").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k config/portpools: %v\n%s", err, out)
	}
	var d appsv1.Deployment
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "netshift-system", Name: "netshift-operator"}, &d); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--port-pools --os-clouds-file=/etc/openstack/clouds.yaml") {
		t.Errorf("operator args with config/portpools: %s", args)
	}
	// The zone controller's overlay, on a cluster with the plugin's namespace.
	out, err = exec.Command(kubectl, "--kubeconfig", env.Kubeconfig, "apply", "--server-side", "--force-conflicts", "-k", "../../config/ovn-zones").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k config/ovn-zones: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "role.rbac.authorization.k8s.io/netshift-operator-zones") {
		t.Errorf("config/ovn-zones did not apply the zone controller's Role:\n%s", out)
	}
}

// TestInstallsGrantOnlyWhatTheyUse renders each install users apply and reads
// what it grants: config/default binds no lab group, no system:auth-delegator
// and no right in the network plugin's namespace; the port pools' overlay
// adds the TokenReviews its API needs, the zones' overlay its Role in
// ovn-kubernetes, for one Deployment by name.
func TestInstallsGrantOnlyWhatTheyUse(t *testing.T) {
	testenv.Require(t, envMissing)
	kubectl := filepath.Join(env.AssetsDir, "kubectl")
	render := func(dir string) string {
		out, err := exec.Command(kubectl, "kustomize", "../../config/"+dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize config/%s: %v\n%s", dir, err, out)
		}
		return string(out)
	}
	for dir, c := range map[string]struct{ want, not []string }{
		"default":   {not: []string{"kind: Group", "system:auth-delegator", "namespace: ovn-kubernetes", "deployments"}},
		"portpools": {want: []string{"name: system:auth-delegator"}, not: []string{"kind: Group", "namespace: ovn-kubernetes"}},
		"ovn-zones": {want: []string{"namespace: ovn-kubernetes", "deployments/scale", "resourceNames:\n  - ovnkube-central", "--zone-migration"},
			not: []string{"kind: Group", "system:auth-delegator"}},
		"ovn-kubernetes": {want: []string{"namespace: ovn-kubernetes", "resourceNames:\n  - ovn-config", "--network-plugin=ovn-kubernetes"},
			not: []string{"kind: Group", "system:auth-delegator", "deployments/scale", "ovnkube-central"}},
	} {
		text := render(dir)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("config/%s lacks %q", dir, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(text, n) {
				t.Errorf("config/%s grants %q", dir, n)
			}
		}
		// The operator's cluster-wide role deletes no pod anywhere.
		objs, err := manifests.Decode([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "ClusterRole" || o.GetName() != "netshift-operator" {
				continue
			}
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
			for _, r := range role.Rules {
				if slices.Contains(r.Resources, "pods") && slices.Contains(r.Verbs, "delete") {
					t.Errorf("config/%s: the operator's ClusterRole deletes pods in every namespace: %+v", dir, r)
				}
			}
		}
	}
}
