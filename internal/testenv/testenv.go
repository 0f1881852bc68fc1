// Package testenv starts the real kube-apiserver and etcd that netshift's
// integration tests run against (built by hack/envtest-assets.sh), installs
// netshift's CRDs, RBAC and admission policy from config/, and hands out
// clients that act as netshift's own ServiceAccounts.
//
// A test whose real prerequisite is missing skips with the reason on a
// developer's machine and FAILS when CI=true, so CI can never pass with a
// real tier silently skipped.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"netshift.io/netshift/internal/manifests"
	"netshift.io/netshift/internal/operator"
)

// Env is a running control plane with netshift installed.
type Env struct {
	Env        *envtest.Environment
	Admin      *rest.Config
	Client     client.Client // admin
	Root       string        // the repository root
	AssetsDir  string
	Kubeconfig string // admin kubeconfig file, for kubectl and the netshift CLI
}

// Missing explains why a real prerequisite is absent; see Require.
type Missing struct{ Reason string }

func (m *Missing) Error() string { return m.Reason }

// InCI reports whether this run is CI's, where nothing may be skipped.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require skips the test (or fails it under CI=true) when err says a real
// prerequisite is missing, and fails it on any other error.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var m *Missing
	if errors.As(err, &m) {
		if InCI() {
			t.Fatalf("CI=true and a real prerequisite is missing: %s", m.Reason)
		}
		t.Skipf("skipped: %s", m.Reason)
	}
	t.Fatal(err)
}

// RepoRoot finds the repository root from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "envtest-assets.sh")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod with hack/envtest-assets.sh) not found above the working directory")
		}
		dir = parent
	}
}

// AssetsDir is where kube-apiserver, etcd and kubectl are: KUBEBUILDER_ASSETS,
// or the cache hack/envtest-assets.sh fills. It never builds them itself (that
// takes minutes): it says how.
func AssetsDir(root string) (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	out, err := exec.Command(filepath.Join(root, "hack", "envtest-assets.sh"), "--cached-only").Output()
	if err != nil {
		return "", &Missing{Reason: "no kube-apiserver/etcd: run hack/envtest-assets.sh once (builds them, about 10 minutes) or set KUBEBUILDER_ASSETS"}
	}
	return strings.TrimSpace(string(out)), nil
}

// Start starts the control plane and installs config/crd, config/rbac and
// config/policy. Stop it with Stop.
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	e := &Env{Env: te, Admin: cfg, Root: root, AssetsDir: assets}
	if e.Client, err = client.New(cfg, client.Options{Scheme: operator.Scheme()}); err != nil {
		_ = te.Stop()
		return nil, err
	}
	objs, err := manifests.Read(filepath.Join(root, "config", "rbac"), filepath.Join(root, "config", "policy"))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = manifests.Apply(ctx, e.Client, objs)
		cancel()
	}
	if err == nil {
		err = e.writeKubeconfig()
	}
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("install netshift into the test API server: %w", err)
	}
	return e, nil
}

func (e *Env) writeKubeconfig() error {
	f, err := os.CreateTemp("", "netshift-envtest-*.kubeconfig")
	if err != nil {
		return err
	}
	defer f.Close()
	e.Kubeconfig = f.Name()
	_, err = f.Write(e.Env.KubeConfig)
	return err
}

// Stop stops the control plane.
func (e *Env) Stop() {
	if e == nil {
		return
	}
	_ = os.Remove(e.Kubeconfig)
	_ = e.Env.Stop()
}

// Identities of netshift's ServiceAccounts.
const (
	OperatorUser = "system:serviceaccount:netshift-system:netshift-operator"
	AgentUser    = "system:serviceaccount:netshift-system:netshift-agent"
	// NodeNameExtra is the user extra a pod-bound ServiceAccount token carries.
	NodeNameExtra = "authentication.kubernetes.io/node-name"
)

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:netshift-system", "system:authenticated"}

// As returns a config that impersonates user with groups and extra.
func (e *Env) As(user string, groups []string, extra map[string][]string) *rest.Config {
	cfg := rest.CopyConfig(e.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups, Extra: extra}
	return cfg
}

// OperatorConfig acts as the operator's ServiceAccount.
func (e *Env) OperatorConfig() *rest.Config { return e.As(OperatorUser, saGroups, nil) }

// AgentConfig acts as the agent's ServiceAccount with a token bound to a pod on node.
func (e *Env) AgentConfig(node string) *rest.Config {
	return e.As(AgentUser, saGroups, map[string][]string{NodeNameExtra: {node}})
}

// Run is TestMain's body for a package of integration tests: it starts the
// environment into *env (left nil, with the reason in *missing, when a
// prerequisite is absent), runs the tests and stops it.
func Run(m *testing.M, env **Env, missing *error) int {
	e, err := Start()
	if err != nil {
		var ms *Missing
		if !errors.As(err, &ms) {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			return 1
		}
		*missing = err
		return m.Run() // each test calls Require and skips or fails with the reason
	}
	*env = e
	defer e.Stop()
	return m.Run()
}
