package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/testenv"
)

// exitCodeOf is the exit code of a process run by exec.
func exitCodeOf(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1 // it did not run
	}
	return 0
}

// runIn runs the command line in-process, as main does.
func runIn(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeKubeconfig writes a kubeconfig whose contexts all point at server,
// without credentials; its current context is the first.
func writeKubeconfig(t *testing.T, server string, contexts ...string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	for _, name := range contexts {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	}
	cfg.CurrentContext = contexts[0]
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// twoContexts is the test cluster's kubeconfig with two contexts: "env", the
// cluster, and "nowhere", the current one, where nothing listens.
func twoContexts(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.Contexts = map[string]*clientcmdapi.Context{
		"env":     {Cluster: cur.Cluster, AuthInfo: cur.AuthInfo},
		"nowhere": {Cluster: "nowhere", AuthInfo: cur.AuthInfo},
	}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCommandName(t *testing.T) {
	for argv0, want := range map[string]string{
		"netshift":                        "netshift",
		"/usr/local/bin/netshift":         "netshift",
		"bin/netshift-lab":                "netshift",
		"/usr/local/bin/kubectl-netshift": "kubectl netshift",
		"kubectl-net_shift":               "kubectl net-shift",
	} {
		if got := commandName(argv0); got != want {
			t.Errorf("commandName(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// TestContextFlag: --context picks a context of the kubeconfig, from
// --kubeconfig or from $KUBECONFIG, over its current one; the current one
// points where nothing listens: an error talking to the cluster (exit 1).
func TestContextFlag(t *testing.T) {
	testenv.Require(t, envMissing)
	kubeconfig := twoContexts(t)
	code, _, stderr := runIn("--kubeconfig", kubeconfig, "status")
	if code != exitFailed || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("status in the current context, where nothing listens: exit %d, %s; want exit 1 naming 127.0.0.1:1", code, stderr)
	}
	code, stdout, stderr := runIn("--kubeconfig", kubeconfig, "--context", "env", "status", "-o", "json")
	var r struct{ Pools []any }
	if code != exitOK || json.Unmarshal([]byte(stdout), &r) != nil {
		t.Errorf("status --context env: exit %d, %s%s", code, stdout, stderr)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	if code, stdout, stderr := runIn("--context", "env", "status"); code != exitOK || stdout == "" {
		t.Errorf("status --context env with $KUBECONFIG: exit %d, %s%s", code, stdout, stderr)
	}
	code, _, stderr = runIn("--context", "nope", "version")
	if code != exitOK {
		t.Errorf("version needs no cluster, whatever --context says: exit %d, %s", code, stderr)
	}
	code, _, stderr = runIn("--context", "nope", "status")
	if code != exitUsage || !strings.Contains(stderr, `--context: "nope" is not a context of the kubeconfig (its contexts: env, nowhere)`) {
		t.Errorf("status --context nope: exit %d, %s", code, stderr)
	}
}

// TestStatusExitCodes: status exits 0 on a healthy cluster and 3 while a
// failed change is still wanted; -o yaml is the same object as -o json.
func TestStatusExitCodes(t *testing.T) {
	testenv.Require(t, envMissing)
	ctx := t.Context()
	kc := env.Kubeconfig
	if code, stdout, stderr := runIn("--kubeconfig", kc, "status"); code != exitOK {
		t.Fatalf("status of a healthy cluster: exit %d\n%s%s", code, stdout, stderr)
	}
	mtu := int32(1450)
	cn := &v1alpha1.NetshiftNetwork{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName}, Spec: v1alpha1.NetshiftNetworkSpec{MTU: &mtu}}
	if err := env.Client.Create(ctx, cn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cn) }) // t.Context() is over by then
	// What the operator records when a change's preconditions failed and the spec still asks for it.
	msg := "mtu-1 from 1500 to 1450 failed: node cli-1: UDP port 4789 is in use"
	cn.Status.Applied = &v1alpha1.AppliedNetwork{MTU: 1500, VXLANPort: 4789, GenevePort: 6081}
	cn.Status.Change = &v1alpha1.NetworkChange{ID: "mtu-1", Kind: v1alpha1.ChangeMTU, From: 1500, To: 1450, Phase: v1alpha1.PhaseFailed, Message: "node cli-1: UDP port 4789 is in use"}
	meta.SetStatusCondition(&cn.Status.Conditions, metav1.Condition{Type: v1alpha1.NetshiftNetworkDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonChangeFailed, Message: msg})
	if err := env.Client.Status().Update(ctx, cn); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runIn("--kubeconfig", kc, "status")
	if code != exitProblem || !strings.Contains(stdout, "DEGRADED "+msg) || !strings.Contains(stderr, "change degraded: "+msg) {
		t.Errorf("status with a failed change: exit %d\n%s%s", code, stdout, stderr)
	}
	// Watching, interrupted: the code of the last report printed.
	watch := exec.Command(binary, "--kubeconfig", kc, "status", "-w", "100ms")
	out, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	for lines := bufio.NewScanner(out); lines.Scan(); {
		if strings.HasPrefix(lines.Text(), "DEGRADED") {
			break // its first report is out
		}
	}
	_ = watch.Process.Signal(os.Interrupt)
	_, _ = io.Copy(io.Discard, out) // to its end, before Wait closes it
	if code := exitCodeOf(watch.Wait()); code != exitProblem {
		t.Errorf("status -w, interrupted: exit %d, want 3", code)
	}
	_, asJSON, _ := runIn("--kubeconfig", kc, "status", "-o", "json")
	code, asYAML, stderr := runIn("--kubeconfig", kc, "status", "-o", "yaml")
	var fromJSON, fromYAML any
	if err := json.Unmarshal([]byte(asJSON), &fromJSON); err != nil {
		t.Fatalf("-o json: %v\n%s", err, asJSON)
	}
	if err := yaml.Unmarshal([]byte(asYAML), &fromYAML); err != nil {
		t.Fatalf("-o yaml: %v\n%s", err, asYAML)
	}
	// t0InMs alone changes between two reads, and this change has no T0.
	if code != exitProblem || !reflect.DeepEqual(fromJSON, fromYAML) || !strings.Contains(asYAML, "phase: Failed") {
		t.Errorf("-o yaml (exit %d, %s) is not -o json:\n%s\n%s", code, stderr, asYAML, asJSON)
	}
}

// TestKubectlPlugin: kubectl runs the product build as `kubectl netshift`
// when it is on PATH as kubectl-netshift; its usage lines say so, and its
// exit codes come through.
func TestKubectlPlugin(t *testing.T) {
	testenv.Require(t, envMissing)
	dir := t.TempDir()
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl-netshift"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (int, string) {
		cmd := exec.Command(filepath.Join(env.AssetsDir, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return exitCodeOf(err), string(out)
	}
	if code, out := kubectl("netshift", "status", "--help"); code != 0 || !strings.Contains(out, "kubectl netshift status [flags]") {
		t.Errorf("kubectl netshift status --help: exit %d\n%s", code, out)
	}
	if code, out := kubectl("netshift", "--kubeconfig", env.Kubeconfig, "status", "-o", "json"); code != exitOK || !strings.Contains(out, `"pools"`) {
		t.Errorf("kubectl netshift status: exit %d\n%s", code, out)
	}
	if code, out := kubectl("netshift", "status", "-o", "xml"); code != exitUsage {
		t.Errorf("kubectl netshift status -o xml: exit %d, want 2\n%s", code, out)
	}
}
