package scale

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"netshift.io/netshift/api/v1alpha1"
	"netshift.io/netshift/internal/controlplane"
	"netshift.io/netshift/internal/prereq"
)

// kwokAnnotation marks the Nodes kwok keeps alive (and only those).
const kwokAnnotation = "kwok.x-k8s.io/node"

// cluster is the simulated cluster's control plane, kwok and operator.
type cluster struct {
	dir      string
	cp       *controlplane.ControlPlane
	procs    []*process
	operator *process
	timeURL  string
	// agentLog is where the agents log (dir/agents.log).
	agentLog logr.Logger
	// metricsURL is the operator's Prometheus endpoint.
	metricsURL string
	closeLog   func() error
	out        io.Writer
}

// process is a child process the cluster started.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// KwokBinary is kwok's binary: $NETSHIFT_KWOK, or the one hack/kwok-assets.sh built.
func KwokBinary() (string, error) {
	if p := os.Getenv("NETSHIFT_KWOK"); p != "" {
		return p, nil
	}
	missing := &prereq.Missing{Reason: "no kwok: run hack/kwok-assets.sh once (builds it, about 2 minutes) or set NETSHIFT_KWOK"}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", missing
	}
	out, err := exec.Command(filepath.Join(root, "hack", "kwok-assets.sh"), "--cached-only").Output()
	if err != nil {
		return "", missing
	}
	return strings.TrimSpace(string(out)), nil
}

// startCluster starts the control plane (with kube-controller-manager and
// kube-scheduler), kwok and the operator (netshift, this binary's operator
// command). Stop it with stop, which removes dir's contents too.
func startCluster(ctx context.Context, dir, netshift string, writeSpacing time.Duration, out io.Writer) (*cluster, error) {
	kwok, err := KwokBinary()
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, out: out}
	logf, err := os.Create(filepath.Join(dir, "agents.log"))
	if err != nil {
		return nil, err
	}
	c.closeLog = logf.Close
	// Every line, JSON: production mode would sample the agents' lines away.
	c.agentLog = zap.New(zap.WriteTo(logf), zap.UseDevMode(true), zap.JSONEncoder())
	fmt.Fprintf(out, "scale: starting kube-apiserver, etcd, kube-controller-manager and kube-scheduler in %s\n", dir)
	c.cp, err = controlplane.StartWith(controlplane.Options{Cluster: true, ServiceCIDR: "10.96.0.0/16", Dir: filepath.Join(dir, "control-plane")})
	if err != nil {
		return nil, err
	}
	stages, err := filepath.Glob(filepath.Join(filepath.Dir(kwok), "stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		c.stop()
		return nil, &prereq.Missing{Reason: "no kwok stages beside " + kwok + ": run hack/kwok-assets.sh"}
	}
	args := []string{"--kubeconfig", c.cp.Kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", kwokAnnotation + "=fake", "--cidr", "10.128.0.0/12",
		"--node-lease-duration-seconds", "40", "--server-address", "127.0.0.1:0", "-v", "WARN"}
	for _, s := range stages {
		args = append(args, "--config", s)
	}
	if err := c.start("kwok", kwok, args...); err != nil {
		c.stop()
		return nil, err
	}
	opKubeconfig, err := c.cp.UserKubeconfig(dir, "netshift-operator", "netshift:operators")
	if err != nil {
		c.stop()
		return nil, err
	}
	timeAddr, err := freeAddr()
	if err != nil {
		c.stop()
		return nil, err
	}
	c.timeURL = "http://" + timeAddr + "/time"
	metricsAddr, err := freeAddr()
	if err != nil {
		c.stop()
		return nil, err
	}
	c.metricsURL = "http://" + metricsAddr + "/metrics"
	if err := c.start("operator", netshift, "operator", "--kubeconfig", opKubeconfig, "--leader-elect=false",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0", "--time-bind-address", timeAddr,
		"--time-advertise-url", c.timeURL, "--agent-write-spacing", writeSpacing.String()); err != nil {
		c.stop()
		return nil, err
	}
	c.operator = c.procs[len(c.procs)-1]
	return c, nil
}

// start starts a child process whose output goes to dir/name.log.
func (c *cluster) start(name, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	select {
	case <-p.done:
		return fmt.Errorf("%s exited at start (%v); see %s", name, waitErr, logf.Name())
	case <-time.After(500 * time.Millisecond):
	}
	fmt.Fprintf(c.out, "scale: %s started (pid %d, log %s)\n", name, cmd.Process.Pid, logf.Name())
	return nil
}

// alive says which of the cluster's processes has ended ("" when none has).
func (c *cluster) ended() string {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Sprintf("%s exited; see %s", p.name, filepath.Join(c.dir, p.name+".log"))
		default:
		}
	}
	return ""
}

func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, p := range c.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}()
	}
	wg.Wait()
	c.cp.Stop()
	_ = c.closeLog()
}

// createNodes creates the simulated Nodes, many at once, labelled with their
// pool, for kwok to keep Ready.
func (c *cluster) createNodes(ctx context.Context, names []string, labels func(i int) map[string]string) error {
	return forEach(ctx, len(names), 32, func(ctx context.Context, i int) error {
		l := map[string]string{"kubernetes.io/hostname": names[i], "type": "kwok"}
		for k, v := range labels(i) {
			l[k] = v
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: l, Annotations: map[string]string{kwokAnnotation: "fake"}},
			Status: corev1.NodeStatus{Capacity: nodeCapacity(), Allocatable: nodeCapacity()}}
		if err := c.cp.Client.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Node %s: %w", names[i], err)
		}
		return nil
	})
}

func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
}

// waitReady waits until every Node is Ready (kwok took it) and has its NetshiftNodeState (the operator made it).
func (c *cluster) waitReady(ctx context.Context, nodes int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var list corev1.NodeList
		var states v1alpha1.NetshiftNodeStateList
		ready := 0
		if err := c.cp.Client.List(ctx, &list); err == nil {
			for _, n := range list.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		_ = c.cp.Client.List(ctx, &states)
		if ready >= nodes && len(states.Items) >= nodes {
			return nil
		}
		if e := c.ended(); e != "" {
			return fmt.Errorf("while %d of %d nodes are Ready: %s", ready, nodes, e)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d of %d nodes are Ready (kwok) and %d have a NetshiftNodeState (the operator)", within, ready, nodes, len(states.Items))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// forEach runs do for 0..n-1, at most width at once; the first error ends it.
func forEach(ctx context.Context, n, width int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(width, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
