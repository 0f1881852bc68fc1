package lab

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/cni"
	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/neutron/neutrontest"
	"netshift.io/netshift/internal/operator"
	"netshift.io/netshift/internal/portpool"
	"netshift.io/netshift/internal/portpool/manager"
)

// The lab's Neutron (--neutron): a real neutron-server with ML2/OVN on the
// central OVN databases, listening on the machine's underlay address, where
// the operator's pod on a node reaches it.
const (
	// PoolNamespace is the lab's namespace whose pods get pooled Neutron ports.
	PoolNamespace = "lab-pools"
	neutronPort   = 9696
	// neutronRole is the lab's record of neutron-server: its process group.
	neutronRole = "neutron-server (process group)"
	// neutronDatabaseRole is the lab's record of Neutron's MariaDB server.
	neutronDatabaseRole = "mariadbd (Neutron's database)"
	// neutronProject is the project of the lab's network and pods' ports.
	neutronProject = "lab"
	// neutronCIDR is the pods' Neutron subnet: apart from the lab's own
	// ranges (198.18.0.0/15) and the Services' (serviceCIDR).
	neutronCIDR = "10.244.0.0/16"
)

// NeutronLab is what the lab made in Neutron for its pooled pods.
type NeutronLab struct {
	URL           string `json:"url"`
	Project       string `json:"project"`
	Network       string `json:"network"`
	SecurityGroup string `json:"securityGroup"`
	// TrunkParents are the trunk parent ports of the nodes set up as VMs.
	TrunkParents map[string]string `json:"trunkParents,omitempty"`
}

// TrunkBridge is the bridge of a lab node set up as a VM with a trunk: its
// uplink is the trunk's parent port (the VM's NIC), a patch port on the
// integration bridge with the parent's iface-id, carrying every subport's VLAN.
const TrunkBridge = "br-trunk"

// makeTrunkNodes sets each of the lab's trunk nodes up as a VM whose NIC is
// a Neutron trunk's parent port: the parent bound to the node, its trunk,
// and the node's trunk bridge joined to the integration bridge by a patch
// pair, the integration side bound to the parent. OVN then binds each
// subport on the node by its parent and VLAN.
func (s *State) makeTrunkNodes(ctx context.Context, sh *shell) error {
	if len(s.Options.TrunkNodes) == 0 {
		return nil
	}
	n := s.Neutron
	nc, err := neutron.Connect(ctx, neutron.Options{URL: n.URL})
	if err != nil {
		return err
	}
	parents := map[string]string{}
	for _, node := range s.Options.TrunkNodes {
		name := "trunk-parent-" + node
		var parent neutron.Port
		if err := retryNeutron(ctx, func() (err error) {
			parent, err = nc.CreatePort(ctx, neutron.NewPort{NetworkID: n.Network, ProjectID: n.Project, Name: name,
				SecurityGroups: []string{n.SecurityGroup}, HostID: node})
			return err
		}, func() (bool, error) { // a create that failed ambiguously may have happened: adopt it
			found, err := nc.ListPorts(ctx, url.Values{"name": {name}})
			if len(found) > 0 {
				parent = found[0]
			}
			return len(found) > 0, err
		}); err != nil {
			return fmt.Errorf("node %s: trunk parent port: %w", node, err)
		}
		if err := retryNeutron(ctx, func() error {
			_, err := nc.CreateTrunk(ctx, n.Project, parent.ID)
			return err
		}, func() (bool, error) {
			_, err := nc.TrunkOfParent(ctx, parent.ID)
			return err == nil, nil
		}); err != nil {
			return fmt.Errorf("node %s: trunk of parent %s: %w", node, parent.ID, err)
		}
		if _, err := s.vsctl(ctx, sh, node, "--may-exist", "add-br", TrunkBridge, "--", "set", "bridge", TrunkBridge, "datapath_type=netdev",
			"--", "--may-exist", "add-port", TrunkBridge, "tpt0", "--", "set", "interface", "tpt0", "type=patch", "options:peer=tpi0",
			"--", "--may-exist", "add-port", "br-int", "tpi0", "--", "set", "interface", "tpi0", "type=patch", "options:peer=tpt0",
			"external_ids:iface-id="+parent.ID, "external_ids:attached-mac="+parent.MACAddress); err != nil {
			return fmt.Errorf("node %s: trunk bridge: %w", node, err)
		}
		parents[node] = parent.ID
	}
	return s.record(func() { s.Neutron.TrunkParents = parents })
}

// retryNeutron makes one of the lab's own Neutron objects, trying again for
// a while on an error a retry can cure (a 5xx, a timeout): a just-started
// neutron-server answered the lab's first port with a 500 once in CI (its
// log went with the lab; lab up now prints its last errors). Before each
// retry, made says whether the failed call happened after all (and adopts
// what it made).
func retryNeutron(ctx context.Context, call func() error, made func() (bool, error)) error {
	err := call()
	for attempt := 1; err != nil && neutron.Retryable(err) && attempt <= 5; attempt++ {
		select {
		case <-time.After(time.Duration(attempt) * time.Second):
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		}
		if ok, merr := made(); merr == nil && ok {
			return nil
		}
		err = call()
	}
	return err
}

// annotateTrunkNodes marks each trunk node with its parent port, as an
// installer marks a VM node: the operator then hands its pods subports.
func (s *State) annotateTrunkNodes(ctx context.Context) error {
	if s.Neutron == nil || len(s.Neutron.TrunkParents) == 0 {
		return nil
	}
	c, err := s.Client()
	if err != nil {
		return err
	}
	for node, parent := range s.Neutron.TrunkParents {
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, manager.TrunkAnnotation, parent)))
		if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, patch); err != nil {
			return fmt.Errorf("node %s: annotate its trunk parent port: %w", node, err)
		}
	}
	return nil
}

// startNeutron starts the lab's neutron-server on a MariaDB server of its own,
// each a process of its own (they outlive `lab up`; `lab down` stops them
// with the rest), and makes the pods' network, subnet and security group.
func (s *State) startNeutron(ctx context.Context) error {
	database, err := s.startNeutronDatabase(ctx)
	if err != nil {
		return err
	}
	cmd, url, err := neutrontest.Command(ctx, s.Path("neutron"), neutrontest.Settings{Host: hostIP, Port: neutronPort, NB: s.NBDB(), SB: s.SBDB(),
		// Two API workers on the database server: a burst of pods' ports is answered side by side.
		APIWorkers: 2, Database: database.URL()})
	if err != nil {
		return err
	}
	out, err := os.Create(s.Path("neutron", "neutron-server.out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start neutron-server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := neutrontest.WaitReady(ctx, url, exited, 2*time.Minute); err != nil {
		return errors.Join(fmt.Errorf("%w; see %s", err, filepath.Join(s.Path("neutron"), "neutron-server.log")), stopGroup(cmd.Process.Pid, 5*time.Second))
	}
	// Recorded once it is up (its title, and so its name, changes as it starts), and stopped
	// by its process group, its own session's: the workers it forks, and forks again when one
	// dies, go with it.
	leader, err := Identify(neutronRole, cmd.Process.Pid)
	if err == nil {
		err = s.record(func() { s.Processes = append(s.Processes, leader) })
	}
	if err != nil {
		return errors.Join(fmt.Errorf("neutron-server: %w", err), stopGroup(cmd.Process.Pid, 5*time.Second))
	}
	nc, err := neutron.Connect(ctx, neutron.Options{URL: url})
	if err != nil {
		return err
	}
	network, err := nc.CreateNetwork(ctx, neutronProject, "pods", neutronCIDR)
	if err != nil {
		return err
	}
	group, err := nc.CreateSecurityGroup(ctx, neutronProject, "pods")
	if err != nil {
		return err
	}
	if err := nc.AllowIngressIPv4(ctx, neutronProject, group); err != nil {
		return err
	}
	return s.record(func() {
		s.Neutron = &NeutronLab{URL: url, Project: neutronProject, Network: network, SecurityGroup: group}
	})
}

// startNeutronDatabase starts the MariaDB server Neutron's state lives in
// and makes Neutron's schema there.
func (s *State) startNeutronDatabase(ctx context.Context) (*neutrontest.Database, error) {
	database, cmd, err := neutrontest.NewDatabase(ctx, s.Path("neutron-db"))
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p, err := Identify(neutronDatabaseRole, cmd.Process.Pid)
	if err == nil {
		err = s.record(func() { s.Processes = append(s.Processes, p) })
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("mariadbd: %w", err)
	}
	if err := database.Prepare(ctx, exited, time.Minute); err != nil {
		return nil, fmt.Errorf("the Neutron database: %w", err)
	}
	return database, nil
}

// writeFlatKubeconfig writes the node's kubeconfig at from to to, as
// netshift-cni's identity is made (its credentials inlined).
func writeFlatKubeconfig(from, to string) error {
	data, err := cni.NodeIdentity(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// createNeutronObjects makes what the lab's port pools need in the cluster:
// the operator's clouds.yaml (a no-auth endpoint) and the pool-enabled
// namespace, set to the lab's project, network and security group.
func (s *State) createNeutronObjects(ctx context.Context, c client.Client) error {
	n := s.Neutron
	if n == nil {
		return errors.New("--neutron: the lab's Neutron was not set up")
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operator.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	clouds := fmt.Sprintf("clouds:\n  openstack:\n    auth_type: none\n    auth:\n      endpoint: %s\n", n.URL)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: "netshift-openstack"},
		StringData: map[string]string{"clouds.yaml": clouds}}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("secret netshift-openstack: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PoolNamespace, Labels: map[string]string{portpool.OptInLabel: "enabled"},
		Annotations: map[string]string{manager.ProjectAnnotation: n.Project, manager.NetworkAnnotation: n.Network, manager.SecurityGroupsAnnotation: n.SecurityGroup}}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("namespace %s: %w", PoolNamespace, err)
	}
	return nil
}

// NodeFile is where a file of a node (a path inside it, such as
// /etc/cni/net.d/netshift-cni/kubeconfig) lives on the machine.
func (s *State) NodeFile(node, inside string) (string, error) {
	n, ok := s.Topology.Node(node)
	if !ok {
		return "", fmt.Errorf("no node %s in lab %s", node, s.Options.Name)
	}
	return s.kubeNode(n, "").Path(inside), nil
}

// stopGroup ends a process group: SIGTERM, then SIGKILL after grace.
func stopGroup(pgid int, grace time.Duration) error {
	if pgid <= 1 || syscall.Kill(-pgid, 0) != nil {
		return nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	for end := time.Now().Add(grace); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(-pgid, 0) != nil {
			return nil
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for range 100 {
		if syscall.Kill(-pgid, 0) != nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("process group %d did not stop", pgid)
}

// lastErrors is the last n error lines of an OpenStack service's log (each
// line of a traceback carries the level, so they end with the exception);
// "" when the log is not there.
func lastErrors(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var picked []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, " ERROR ") || strings.Contains(l, " CRITICAL ") {
			picked = append(picked, l)
		}
	}
	return strings.Join(picked[max(0, len(picked)-n):], "\n")
}
