// Package portpool_test runs the port pools as a cluster does: the netshift
// operator as its own process, against a real API server and a real
// neutron-server, killed with SIGKILL at random points while pods come and go.
package portpool_test

import (
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool/manager"
	"netshift.io/netshift/internal/testenv"
)

var (
	env            *testenv.Env
	envMissing     error
	neutronServer  *testenv.Neutron
	neutronMissing error
	binary         string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "netshift-leak-")
		if err != nil {
			return 1
		}
		defer os.RemoveAll(dir)
		if binary, err = testenv.BuildNetshift(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return testenv.RunWithNeutron(m, &env, &envMissing, &neutronServer, &neutronMissing)
	}())
}

// operatorProcess is the netshift operator with port pools, as its own process.
type operatorProcess struct {
	t    *testing.T
	args []string
	log  string
	cmd  *exec.Cmd
	runs int
}

func (o *operatorProcess) start() {
	o.t.Helper()
	logf, err := os.OpenFile(o.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		o.t.Fatal(err)
	}
	defer logf.Close()
	o.cmd = exec.Command(binary, o.args...)
	o.cmd.Stdout, o.cmd.Stderr = logf, logf
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := o.cmd.Start(); err != nil {
		o.t.Fatal(err)
	}
	o.runs++
}

func (o *operatorProcess) kill() {
	_ = o.cmd.Process.Kill()
	_ = o.cmd.Wait()
}

// TestNoLeakWithKills: 150 pods are created and deleted, 20 alive at a time,
// while the operator is SIGKILLed and started again at random moments (in the
// middle of bulk creates, acquisitions and recycles: all three run all the
// time). No port is ever held by two live pods; at the end every netshift port
// in Neutron is in a pool or owned by a live pod, and their number is within
// the pool's maximum. At least one kill lands while a bulk create is in
// flight and one while released ports wait for the recycler.
// leakTestPods is how many pods go through the pools in TestNoLeakWithKills:
// with a kill every 1 to 5 s, some 45 kills land (300 took 4.5 minutes of CI).
const leakTestPods = 150

func TestNoLeakWithKills(t *testing.T) {
	testenv.Require(t, envMissing)
	testenv.Require(t, neutronMissing)
	ctx := t.Context()
	dir := t.TempDir()
	nc, err := neutron.Connect(ctx, neutron.Options{URL: neutronServer.URL})
	if err != nil {
		t.Fatal(err)
	}
	network, err := nc.CreateNetwork(ctx, "leak", "leak", "10.50.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	sg, err := nc.CreateSecurityGroup(ctx, "leak", "pods")
	if err != nil {
		t.Fatal(err)
	}
	const ns, cluster, maxSize = "leak", "leak-test", 40
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{manager.OptInLabel: "enabled"},
		Annotations: map[string]string{manager.ProjectAnnotation: "leak", manager.NetworkAnnotation: network, manager.SecurityGroupsAnnotation: sg}}}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := env.UserKubeconfig(dir, "netshift:operator", "netshift:operators")
	if err != nil {
		t.Fatal(err)
	}
	api := filepath.Join(dir, "portpool.sock")
	op := &operatorProcess{t: t, log: filepath.Join(dir, "operator.log"), args: []string{"operator", "--kubeconfig", kubeconfig,
		"--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--time-bind-address", "0",
		"--port-pools", "--neutron-url", neutronServer.URL, "--cluster-id", cluster, "--portpool-api", api,
		"--pool-min-ready", "5", "--pool-batch", "8", "--pool-max-size", fmt.Sprint(maxSize), "--pool-recycle-period", "200ms",
		"--pool-max-concurrent-creates", "2"}}
	op.start()
	defer func() {
		op.kill()
		if t.Failed() {
			data, _ := os.ReadFile(op.log)
			kept := filepath.Join(os.TempDir(), "netshift-leak-operator.log")
			_ = os.WriteFile(kept, data, 0o600)
			t.Logf("operator log (whole in %s; last 4 KiB):\n%s", kept, tail(data, 4096))
		}
	}()

	c, err := manager.NewClient(api, manager.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	killedMidCreate, killedMidRecycle := false, false
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	nextKill := time.Now().Add(time.Duration(500+rng.Intn(2500)) * time.Millisecond)
	var live []*corev1.Pod
	created, kills := 0, 0
	deadline := time.Now().Add(8 * time.Minute)
	checkUnique := func() {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		owner := map[string]string{}
		for i := range pods.Items {
			a, ok, err := manager.AssignmentOf(&pods.Items[i])
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
			if prev, dup := owner[a.ID]; dup {
				t.Fatalf("port %s is held by %s and %s at once", a.ID, prev, pods.Items[i].Name)
			}
			owner[a.ID] = pods.Items[i].Name
		}
	}
	for created < leakTestPods || len(live) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d pods did not get through in 8 minutes (%d created, %d alive, %d kills)", leakTestPods, created, len(live), kills)
		}
		// Besides the random kills, one lands while a bulk create is in flight and one while
		// released ports wait to be recycled, as soon as the API shows either.
		var midCreate, midRecycle bool
		if !killedMidCreate || !killedMidRecycle {
			if st, err := c.List(ctx); err == nil {
				for _, p := range st.Pools {
					midCreate = midCreate || (p.Creating > 0 && !killedMidCreate)
					midRecycle = midRecycle || (p.Recycling > 0 && !killedMidRecycle)
				}
			}
		}
		if time.Now().After(nextKill) || midCreate || midRecycle {
			killedMidCreate = killedMidCreate || midCreate
			killedMidRecycle = killedMidRecycle || midRecycle
			op.kill()
			kills++
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
			op.start()
			nextKill = time.Now().Add(time.Duration(1000+rng.Intn(4000)) * time.Millisecond)
		}
		switch {
		case created < leakTestPods && len(live) < 20:
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", created), Namespace: ns},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("worker-%d", created%2+1), Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			if err := env.Client.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			live = append(live, p)
			created++
		default:
			// The oldest pod goes once it has its port (or at once when all were created and
			// it waits too long: a pod may be deleted before it ever got one).
			var cur corev1.Pod
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(live[0]), &cur); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := manager.AssignmentOf(&cur); ok || rng.Intn(10) == 0 {
				if err := env.Client.Delete(ctx, live[0], client.GracePeriodSeconds(0)); err != nil {
					t.Fatal(err)
				}
				live = live[1:]
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if created%25 == 0 {
			checkUnique()
		}
	}
	checkUnique()
	// One last restart: recovery must account for everything, whatever the last kill interrupted.
	op.kill()
	op.start()
	if !killedMidCreate || !killedMidRecycle {
		t.Errorf("no kill while a bulk create was in flight (%v) or while ports waited to be recycled (%v)", killedMidCreate, killedMidRecycle)
	}
	var st manager.Status
	settled := func() bool {
		var err error
		st, err = c.List(ctx)
		if err != nil || !st.Recovered || st.Pending > 0 || st.Deleting > 0 {
			return false
		}
		for _, p := range st.Pools {
			if p.Creating > 0 || p.Recycling > 0 || p.InUse > 0 {
				return false
			}
		}
		return true
	}
	for end := time.Now().Add(time.Minute); !settled(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the pools did not settle after the last restart: %+v", st)
		}
	}
	// A bulk create the last killed run sent may land in Neutron after the
	// new run's recovery: its late sweep (10 s after) adopts those ports.
	var tagged []neutron.Port
	pooled := map[string]bool{}
	accounted := func() bool {
		var err error
		if tagged, err = nc.ListPorts(ctx, url.Values{"tags": {"netshift-cluster=" + cluster}}); err != nil {
			t.Fatal(err)
		}
		if !settled() {
			return false
		}
		clear(pooled)
		for _, p := range st.Pools {
			d, err := c.Show(ctx, p.Key)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range d.ReadyPorts {
				pooled[q.ID] = true
			}
		}
		return len(tagged) == len(pooled)
	}
	for end := time.Now().Add(30 * time.Second); !accounted() && time.Now().Before(end); time.Sleep(time.Second) {
	}
	for _, p := range tagged {
		if !pooled[p.ID] {
			t.Errorf("port %s (%s, device %q) is in Neutron but in no pool and owned by no live pod: leaked", p.ID, p.Name, p.DeviceID)
		}
	}
	perPool := map[string]int{}
	for _, p := range st.Pools {
		perPool[p.Key] = p.Ready
		if p.Ready > maxSize {
			t.Errorf("pool %s holds %d ports, over its maximum of %d", p.Key, p.Ready, maxSize)
		}
	}
	if len(tagged) != len(pooled) {
		t.Errorf("%d netshift ports in Neutron, %d in pools", len(tagged), len(pooled))
	}
	t.Logf("%d pods, %d operator kills (%d runs); at the end %d ports in Neutron, all pooled: %v", leakTestPods, kills, op.runs, len(tagged), perPool)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
