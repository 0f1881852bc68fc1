// Package controlplane runs a real kube-apiserver and etcd on this machine
// (the binaries hack/envtest-assets.sh builds), with netshift's CRDs, RBAC and
// admission policy installed. The tests, the demo and the lab run on it.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"netshift.io/netshift/config"
	"netshift.io/netshift/internal/manifests"
	"netshift.io/netshift/internal/prereq"
	"netshift.io/netshift/internal/scheme"
)

// ControlPlane is a running API server with netshift installed.
type ControlPlane struct {
	Env        *envtest.Environment
	Admin      *rest.Config
	Client     client.Client // admin
	AssetsDir  string
	Kubeconfig string // admin kubeconfig file, for kubectl and the netshift CLI
	// controllers are kube-controller-manager and kube-scheduler (a Cluster control plane).
	controllers []*controller
	// CAFile is the API server's CA (a Cluster control plane): what kubelets and pods trust.
	CAFile string
	// ownDir is the controllers' directory this control plane made, removed by Stop.
	ownDir string
}

// MissingError says that the API server binaries are not there.
type MissingError = prereq.Missing

// RepoRoot finds the netshift checkout above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "envtest-assets.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("netshift checkout (hack/envtest-assets.sh) not found above the working directory")
		}
		dir = parent
	}
}

// AssetsDir is where kube-apiserver, etcd and kubectl are: KUBEBUILDER_ASSETS,
// or the cache hack/envtest-assets.sh fills. It never builds them itself (that
// takes minutes): it says how.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	missing := &MissingError{Reason: "no kube-apiserver/etcd: run hack/envtest-assets.sh once (builds them, about 10 minutes) or set KUBEBUILDER_ASSETS"}
	root, err := RepoRoot()
	if err != nil {
		return "", missing
	}
	out, err := exec.Command(filepath.Join(root, "hack", "envtest-assets.sh"), "--cached-only").Output()
	if err != nil {
		return "", missing
	}
	return strings.TrimSpace(string(out)), nil
}

// Start starts kube-apiserver and etcd and installs netshift's CRDs, RBAC and
// admission policy. Stop it with Stop.
func Start() (*ControlPlane, error) { return StartWith(Options{}) }

// Options make the control plane one that real nodes join.
type Options struct {
	// Address is where the API server serves (default 127.0.0.1): an address
	// the nodes reach, which its certificate then names.
	Address string
	// Cluster runs it as a cluster's control plane: the ServiceAccount admission
	// that gives pods their tokens, the Node authorizer and NodeRestriction for
	// kubelets, kube-controller-manager and kube-scheduler (with Dir, for their
	// logs), and ServiceCIDR as the service range.
	Cluster     bool
	ServiceCIDR string
	Dir         string
	// Controllers, without Cluster, runs kube-controller-manager with just
	// these controllers (for example "disruption", so that PodDisruptionBudgets
	// are enforced as in a cluster): its files go into Dir, or a directory of
	// its own that Stop removes.
	Controllers []string
	// WithoutNetshift leaves netshift's CRDs, RBAC and admission policies out:
	// a cluster netshift is yet to be installed on.
	WithoutNetshift bool
}

// StartWith starts the control plane as o asks.
func StartWith(o Options) (*ControlPlane, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	objs, err := manifests.ReadFS(config.Install)
	if err != nil {
		return nil, fmt.Errorf("read embedded manifests: %w", err)
	}
	// envtest gives each component 20 s to answer: on a 2-core machine busy with a lab, a cold
	// kube-apiserver took longer five times in a row and the test never started.
	te := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 2 * time.Minute}
	if o.Dir != "" {
		// etcd's data beside the rest: whoever owns Dir (a lab, a test) owns all of it.
		te.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(o.Dir, "etcd")}
	}
	if o.Address != "" || o.Cluster {
		te.ControlPlane.APIServer = &envtest.APIServer{}
		api := te.ControlPlane.APIServer
		if o.Address != "" {
			// envtest picks a loopback port unless given both an address and a port.
			port, err := freePort(o.Address)
			if err != nil {
				return nil, fmt.Errorf("API server address %s: %w", o.Address, err)
			}
			api.Address, api.Port = o.Address, port
			api.Configure().Set("advertise-address", o.Address)
		}
		if o.Cluster {
			api.Configure().Disable("disable-admission-plugins").
				Set("enable-admission-plugins", "NodeRestriction").
				Set("authorization-mode", "Node,RBAC").
				Set("kubelet-preferred-address-types", "InternalIP,Hostname")
			if o.ServiceCIDR != "" {
				api.Configure().Set("service-cluster-ip-range", o.ServiceCIDR)
				// In-cluster clients verify the kubernetes Service's address: the serving
				// certificate must name it (envtest's names only its listen address).
				svc, err := kubernetesServiceIP(o.ServiceCIDR)
				if err != nil {
					return nil, err
				}
				ips := []net.IP{svc}
				if o.Address != "" {
					ips = append(ips, net.ParseIP(o.Address))
				}
				api.CertDir = filepath.Join(o.Dir, "pki")
				if api.CA, err = writeServingCerts(api.CertDir, ips); err != nil {
					return nil, fmt.Errorf("API server certificates: %w", err)
				}
			}
		}
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cp := &ControlPlane{Env: te, Admin: cfg, AssetsDir: assets}
	switch {
	case o.Cluster:
		err = cp.startControllers(o.Dir, []string{"*"}, true)
	case len(o.Controllers) > 0:
		dir := o.Dir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "netshift-controllers-"); err != nil {
				break
			}
			cp.ownDir = dir
		}
		err = cp.startControllers(dir, o.Controllers, false)
	}
	if err != nil {
		cp.Stop()
		return nil, err
	}
	if cp.Client, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err == nil && !o.WithoutNetshift {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = manifests.Apply(ctx, cp.Client, objs)
		cancel()
	}
	if err == nil {
		// In the control plane's own directory when it has one: a killed process leaves it
		// where its owner (the lab) cleans up, not in the machine's temporary directory.
		cp.Kubeconfig, err = writeKubeconfig(o.Dir, cfg, "admin")
	}
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("install netshift into the API server: %w", err)
	}
	return cp, nil
}

// Stop stops the controllers, the API server and etcd and removes the
// kubeconfig file.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	cp.stopControllers()
	if cp.ownDir != "" {
		_ = os.RemoveAll(cp.ownDir)
	}
	_ = os.Remove(cp.Kubeconfig)
	_ = cp.Env.Stop()
}

// Identities of netshift's ServiceAccounts.
const (
	OperatorUser = "system:serviceaccount:netshift-system:netshift-operator"
	AgentUser    = "system:serviceaccount:netshift-system:netshift-agent"
	// NodeNameExtra is the user extra a pod-bound ServiceAccount token carries.
	NodeNameExtra = "authentication.kubernetes.io/node-name"
)

// ServiceAccountGroups are the groups of a netshift-system ServiceAccount.
var ServiceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:netshift-system", "system:authenticated"}

// As returns a config that impersonates user with groups and extra.
func (cp *ControlPlane) As(user string, groups []string, extra map[string][]string) *rest.Config {
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups, Extra: extra}
	return cfg
}

// OperatorConfig acts as the operator's ServiceAccount.
func (cp *ControlPlane) OperatorConfig() *rest.Config {
	return cp.As(OperatorUser, ServiceAccountGroups, nil)
}

// OperatorClient is a client acting as the operator's ServiceAccount: what
// writes only the operator may make (a pod's port record) go through it.
func (cp *ControlPlane) OperatorClient() (client.Client, error) {
	return client.New(cp.OperatorConfig(), client.Options{Scheme: scheme.New()})
}

// AgentConfig acts as the agent's ServiceAccount with a token bound to a pod on node.
func (cp *ControlPlane) AgentConfig(node string) *rest.Config {
	return cp.As(AgentUser, ServiceAccountGroups, map[string][]string{NodeNameExtra: {node}})
}

// UserKubeconfig creates a user with its own client certificate (its own
// identity, as a process on another machine would have) and writes a
// kubeconfig for it into dir.
func (cp *ControlPlane) UserKubeconfig(dir, user string, groups ...string) (string, error) {
	u, err := cp.Env.AddUser(envtest.User{Name: user, Groups: groups}, cp.Admin)
	if err != nil {
		return "", fmt.Errorf("create user %s: %w", user, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, strings.NewReplacer(":", "-", "/", "-").Replace(user)+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// freePort finds a TCP port free on addr.
func freePort(addr string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

func writeKubeconfig(dir string, cfg *rest.Config, name string) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	f, err := os.CreateTemp(dir, "netshift-"+name+"-*.kubeconfig")
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), clientcmd.WriteToFile(*kc, f.Name())
}
