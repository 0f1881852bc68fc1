package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab"
	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/portpool"
)

// churnTestPods is how many pooled pods the churn test runs through the
// nodes: enough for several operator kills (each a 15 s stop of the pools)
// to land at every stage of a pod's port. Most of the test's time is those
// stops: 120 pods took over 7 minutes of a CI run, 300 took 11, 60 took 3.6
// with six kills; 40 see three.
const churnTestPods = 40

// churnKills are when the churn test kills the operator's pods: after about
// a sixth, a half and five sixths of its pods were created (give or take 2),
// counted in pods and not in seconds, since a kill on a clock never came in
// a churn that was over in 31 s.
func churnKills(rng *rand.Rand) []int {
	var at []int
	for _, part := range []int{1, 3, 5} {
		at = append(at, part*churnTestPods/6+rng.Intn(5)-2)
	}
	return at
}

// pooledPodChurnLeaksNothing (a step of TestThreeNodeNeutronLab): 40 pooled pods through the real kubelets
// of 3 nodes, 20 alive at a time, while the operator's pods are killed (deleted
// with no grace) three times (churnKills; each kill costs the pools the leader
// election's lease, 15 s, and the new leader's recovery); one pod in ten is deleted before it runs,
// most of those while netshift-cni waits for its port. No port is ever held by
// two live pods. At the end nothing is plugged on any node, no pod's node end
// or sandbox record is left, and every netshift port in Neutron is free in a
// pool, none over the pool's maximum.
func pooledPodChurnLeaksNothing(t *testing.T, name string) {
	w := newPooledWorld(t, name)
	ctx := context.Background()
	const maxSize = 30
	setOperatorArgs(t, w.c, []string{"--pool-min-ready=5", "--pool-batch=5", fmt.Sprintf("--pool-max-size=%d", maxSize), "--pool-recycle-period=200ms"})

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	type livePod struct {
		pod     *corev1.Pod
		created time.Time
		early   bool // deleted whether it runs or not
	}
	var live []livePod
	created, kills, early, ran, taken := 0, 0, 0, 0, 0
	reuse := devicesSeen{}
	killAt := churnKills(rng)
	start := time.Now()
	deadline := start.Add(15 * time.Minute)
	for created < churnTestPods || len(live) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d pods did not get through in 15 minutes (%d created, %d alive, %d operator kills)", churnTestPods, created, len(live), kills)
		}
		if kills < len(killAt) && created >= killAt[kills] {
			killOperators(t, w.c)
			kills++
		}
		if created < churnTestPods && len(live) < 20 {
			p := pooledPod(fmt.Sprintf("churn-%03d", created), lab.PoolNamespace, w.s.Topology.Nodes[created%len(w.s.Topology.Nodes)].Name)
			if err := w.c.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			live = append(live, livePod{pod: p, created: time.Now(), early: rng.Intn(10) == 0})
			created++
			continue
		}
		// The oldest goes once it runs (or, for one in ten, a moment after its creation, running
		// or not): a pod's sandbox then meets its DEL at every stage of its ADD.
		var cur corev1.Pod
		oldest := live[0]
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(oldest.pod), &cur); err != nil {
			t.Fatal(err)
		}
		running := cur.Status.Phase == corev1.PodRunning && cur.Status.PodIP != ""
		if running || (oldest.early && time.Since(oldest.created) > time.Duration(rng.Intn(3000))*time.Millisecond) {
			if running {
				ran++
			} else {
				early++
			}
			if running {
				taken += reuse.saw(t, w, &cur)
			}
			if err := w.c.Delete(ctx, &cur, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			live = live[1:]
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		if created%25 == 0 || created == churnTestPods {
			noPortHeldTwice(t, w)
		}
	}
	t.Logf("%d pooled pods in %.0f s: %d ran before their deletion (%d on a parked device), %d deleted early; %d operator kills",
		churnTestPods, time.Since(start).Seconds(), ran, taken, early, kills)
	if kills < len(killAt) {
		t.Errorf("the operator was killed %d times of %d during the churn: too few to land at the stages of a pod's port", kills, len(killAt))
	}
	if taken == 0 {
		t.Errorf("none of the %d pods that ran took its port's parked device: every one was plugged anew", ran)
	}
	noPortHeldTwice(t, w)
	waitFor(t, "every churn pod gone", func() bool {
		var pods corev1.PodList
		return w.c.List(ctx, &pods, client.InNamespace(lab.PoolNamespace)) == nil && len(pods.Items) == 0
	})
	w.noLeak()
	nothingLeftOnNodes(t, w)
	free, err := freePorts(ctx, w.nc)
	if err != nil {
		t.Fatal(err)
	}
	for host, n := range free {
		if n > maxSize {
			t.Errorf("host %s's pool holds %d ports, over its maximum of %d", host, n, maxSize)
		}
	}
	t.Logf("at the end: free pooled ports by node %v", free)
}

// killOperators deletes the operator's pods with no grace, as a node's
// failure or an OOM kill ends them; the Deployment makes new ones.
func killOperators(t *testing.T, c client.Client) {
	t.Helper()
	var operators corev1.PodList
	if err := c.List(context.Background(), &operators, client.InNamespace("netshift-system"),
		client.MatchingLabels{"app.kubernetes.io/name": "netshift-operator"}); err != nil {
		t.Fatal(err)
	}
	for i := range operators.Items {
		if err := c.Delete(context.Background(), &operators.Items[i], client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// noPortHeldTwice fails if two live pods' ownership records name one port.
func noPortHeldTwice(t *testing.T, w *pooledWorld) {
	t.Helper()
	var pods corev1.PodList
	if err := w.c.List(context.Background(), &pods, client.InNamespace(lab.PoolNamespace)); err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, p := range pods.Items {
		a, err := portpool.ParseAssignment(p.Annotations[plug.PoolAnnotation])
		if err != nil || p.DeletionTimestamp != nil {
			continue
		}
		if prev, dup := owner[a.ID]; dup {
			t.Fatalf("port %s is held by %s and %s at once", a.ID, prev, p.Name)
		}
		owner[a.ID] = p.Name
	}
}

// nothingLeftOnNodes asserts that no pooled pod's node end, no parked device
// and no sandbox record of netshift-cni is left on any node a minute after
// every pooled pod is gone (the agent removes parked devices after the
// lab's 30 s).
func nothingLeftOnNodes(t *testing.T, w *pooledWorld) {
	t.Helper()
	for _, n := range w.s.Topology.Nodes {
		dir, err := w.s.NodeFile(n.Name, "/var/lib/netshift/cni")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("node %s: netshift-cni's state directory: %v (it never wired a pod?)", n.Name, err)
		}
		var ends, records []string
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			ends = ends[:0]
			err := netdev.InNetns(n.Netns, func() error {
				links, err := netlink.LinkList()
				for _, l := range links {
					// Node ends, and pod ends parked on the node (kept until the lab's parked TTL, 30 s).
					if strings.HasPrefix(l.Attrs().Name, "tap") || strings.HasPrefix(l.Attrs().Name, "pkd-") {
						ends = append(ends, l.Attrs().Name)
					}
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if records, err = filepath.Glob(filepath.Join(dir, "*.json")); err != nil {
				t.Fatal(err)
			}
			if len(ends) == 0 && len(records) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("node %s, a minute after every pooled pod went: pods' node ends left %v, sandbox records left %v", n.Name, ends, records)
				break
			}
		}
	}
}

// devicesSeen remembers, per node and port, the switch's row for the port's
// integration-side interface as each pod had it: a later pod of the same
// port on the same node with the same row took the parked device (a port
// plugged anew is a new row).
type devicesSeen map[string]string

// saw records a running pod's device and says 1 if it was an earlier pod's.
func (d devicesSeen) saw(t *testing.T, w *pooledWorld, p *corev1.Pod) int {
	t.Helper()
	a, err := portpool.ParseAssignment(p.Annotations[plug.PoolAnnotation])
	if err != nil {
		return 0
	}
	side := plug.NamesFor(a.ID).IntegrationPatch
	var row string
	w.onSwitch(p.Spec.NodeName, func(ctx context.Context, sw *ovs.Switch) {
		if got, err := sw.Interfaces(ctx, side); err == nil {
			row = got[side].UUID
		}
	})
	key := p.Spec.NodeName + "/" + a.ID
	prev := d[key]
	d[key] = row
	if row != "" && row == prev {
		return 1
	}
	return 0
}
