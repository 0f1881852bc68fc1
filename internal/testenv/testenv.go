// Package testenv gives integration tests the real control plane
// (internal/controlplane: kube-apiserver, etcd and the disruption controller
// of kube-controller-manager), once per test package.
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
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/neutron/neutrontest"
)

// Env is the control plane the tests of a package share.
type Env = controlplane.ControlPlane

// Identities of netshift's ServiceAccounts.
const (
	OperatorUser = controlplane.OperatorUser
	AgentUser    = controlplane.AgentUser
)

// Missing explains why a real prerequisite is absent; see Require.
type Missing = controlplane.MissingError

// InCI reports whether this run is CI's, where nothing may be skipped.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require skips the test (or fails it under CI=true) when err says a real
// prerequisite is missing, and fails it on any other error. A test that goes
// on shows the controllers' logs if it fails (LogsOnFailure).
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		LogsOnFailure(t)
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

// Run is TestMain's body for a package of integration tests: it starts the
// control plane into *env (left nil, with the reason in *missing, when a
// prerequisite is absent), runs the tests and stops it.
func Run(m *testing.M, env **Env, missing *error) int {
	// Controllers log through controller-runtime; NETSHIFT_TEST_LOGS=1 shows them,
	// and LogsOnFailure shows a failed test the lines it kept.
	logger := zap.New(zap.WriteTo(logs), zap.ConsoleEncoder(), zap.Level(zapcore.DebugLevel))
	if os.Getenv("NETSHIFT_TEST_LOGS") != "" {
		logger = zap.New(zap.UseDevMode(true))
	}
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // leader election logs through klog
	// The real disruption controller computes PodDisruptionBudgets' status, so the
	// Eviction API enforces them as in a cluster.
	e, err := controlplane.StartWith(controlplane.Options{Controllers: []string{"disruption", "clusterrole-aggregation"}})
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

// RequireRoot skips the test (or fails it under CI=true) unless it runs as
// root, which network namespaces and Open vSwitch need.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Require(t, &Missing{Reason: "needs root (network namespaces)"})
	}
}

// Neutron is a real neutron-server the tests of a package share.
type Neutron = neutrontest.Server

// RunWithNeutron is Run with a real neutron-server started first into *n
// (left nil, with the reason in *nMissing, when it is not installed).
func RunWithNeutron(m *testing.M, env **Env, missing *error, n **Neutron, nMissing *error) int {
	dir, err := os.MkdirTemp("", "netshift-neutron-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*n, *nMissing = neutrontest.Start(context.Background(), dir)
	if *nMissing != nil {
		var ms *Missing
		if !errors.As(*nMissing, &ms) {
			fmt.Fprintln(os.Stderr, "testenv:", *nMissing)
			return 1
		}
	}
	defer (*n).Stop()
	return Run(m, env, missing)
}

// BuildNetshift builds the netshift binary (cmd/netshift, the product build)
// into dir, for tests that run it as a process of its own, and returns its path.
func BuildNetshift(dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(dir, "netshift")
	if out, err := exec.Command("go", "build", "-o", binary, filepath.Join(root, "cmd", "netshift")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build netshift: %w\n%s", err, out)
	}
	return binary, nil
}
