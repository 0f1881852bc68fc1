package agent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/ovs/ovstest"
	"netshift.io/netshift/internal/plug"
	"netshift.io/netshift/internal/testenv"
)

// A migration's target as its agent plugs it, the incoming VM's tap on the
// node first (QEMU opens it as the incoming VM starts) and frames for the
// port coming from the integration bridge all along (OVN may send some
// before the port is activated): none reaches the tap before the VM speaks,
// and the hold has them.
func TestAMigrationTargetsTapGetsNothingBeforeItsVMSpeaks(t *testing.T) {
	testenv.Require(t, envMissing)
	sw := ovstest.Start(t)
	ctx := context.Background()
	c := env.Client
	node := "plug-target"
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, vmNamespace("vms-migration", "8d2e1f30-*", "")); err != nil {
		t.Fatal(err)
	}
	id, mac := "8d2e1f30-4444-4000-8000-00000000000d", "0a:58:c6:12:fa:0d"
	n, tap := plug.NamesFor(id), plug.DefaultTap(id)
	spec := fmt.Sprintf(`{"id":%q,"mac":%q}`, id, mac)
	pod := func(name, node string, annotations map[string]string) *corev1.Pod {
		annotations[plug.PortSpecAnnotation] = spec
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms-migration", Annotations: annotations},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "vm", Image: "vm"}}}}
	}
	if err := c.Create(ctx, pod("vm-source", "plug-source", map[string]string{})); err != nil {
		t.Fatal(err)
	}
	vmTap(t, sw, tap, "vm0") // the incoming VM's
	stopAgent := startAgent(t, node, sw)
	defer stopAgent()

	// A peer on the integration bridge broadcasts a frame every half
	// millisecond: to the patch pairs from the moment they exist.
	vmTap(t, sw, "peer0", "peer1")
	sw.Vsctl("add-port", "br-int", "peer0")
	frame := make([]byte, 60)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0a, 0x58, 0x0a, 0, 0, 7})
	binary.BigEndian.PutUint16(frame[12:], 0x88b5) // IEEE's local experimental
	var fd, ifindex int
	err := netdev.InNetns(sw.Netns, func() error {
		ifi, err := net.InterfaceByName("peer1")
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stop, sent := make(chan struct{}), make(chan int)
	go func() {
		count := 0
		for {
			select {
			case <-stop:
				sent <- count
				return
			case <-time.After(500 * time.Microsecond):
			}
			if unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: ifindex, Halen: 6}) == nil {
				count++
			}
		}
	}()
	if err := c.Create(ctx, pod("vm-target", node, map[string]string{plug.MigrationTargetAnnotation: "vm-source"})); err != nil {
		t.Fatal(err)
	}
	waitConditionMessage(t, c, "vms-migration/vm-target", reasonReady, "activated ahead of the VM")
	time.Sleep(300 * time.Millisecond)
	if got := rxPackets(t, sw, "vm0"); got != 0 {
		t.Errorf("the incoming VM's tap got %d frames before the VM spoke (the resumed VM would take them first, the source VM's already)", got)
	}
	if tag := sw.Vsctl("get", "port", n.BridgePatch, "tag"); tag != "[]" {
		t.Errorf("the target's port is still cut off once held and reported ready: tag %s on %s", tag, n.BridgePatch)
	}
	ifaces, err := sw.DB.Interfaces(ctx, n.BridgePatch)
	if err != nil {
		t.Fatal(err)
	}
	// OpenFlow names no port longer than 15 characters: the patch by its number.
	hold := sw.Run("ovs-ofctl", "dump-flows", n.Bridge, fmt.Sprintf("in_port=%d", ifaces[n.BridgePatch].OFPort))
	if got := sw.Vsctl("port-to-br", tap); got != n.Bridge {
		t.Errorf("the target's tap is on %q once held, want %s", got, n.Bridge)
	}
	kept := false
	for _, flow := range strings.Split(hold, "\n") {
		kept = kept || strings.HasSuffix(flow, "actions=LOCAL") && !strings.Contains(flow, "n_packets=0,")
	}
	if !kept {
		t.Errorf("the frames did not go the hold's way (to %s's own port):\n%s", n.Bridge, hold)
	}

	// A target whose migration ended before its agent came is a VM like any
	// other: its port bridge passes its frames.
	late, lateMAC := "8d2e1f30-5555-4000-8000-00000000000e", "0a:58:c6:12:fa:0e"
	vmTap(t, sw, plug.DefaultTap(late), "vm1")
	latePod := pod("vm-late", node, map[string]string{plug.MigrationTargetAnnotation: "vm-gone"})
	latePod.Annotations[plug.PortSpecAnnotation] = fmt.Sprintf(`{"id":%q,"mac":%q}`, late, lateMAC)
	if err := c.Create(ctx, latePod); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, "vms-migration/vm-late", reasonReady)
	if strings.Contains(cond.Message, "activated ahead") {
		t.Errorf("a target whose source is gone was activated ahead: %s", cond.Message)
	}
	waitFor(t, "the peer's frames at vm-late's tap", func() bool { return rxPackets(t, sw, "vm1") > 0 })

	// Open vSwitch restarts without the flows of the hold and of what the
	// migrated VM's first frame taught the bridge: the target's bridge is a
	// plain one again, passing its VM's frames.
	sw.Restart()
	before := rxPackets(t, sw, "vm0")
	waitFor(t, "the peer's frames at the migrated VM's tap after Open vSwitch restarted", func() bool { return rxPackets(t, sw, "vm0") > before })

	close(stop)
	if count := <-sent; count < 200 {
		t.Errorf("the peer sent only %d frames: too few to show anything", count)
	}
}

// vmTap makes a VM's tap and the VM's end of it (a veth pair stands in for
// the hypervisor's), with no IPv6 of the host's on either end: what the VM's
// end receives came through the switch.
func vmTap(t *testing.T, sw *ovstest.Switch, tap, vm string) {
	t.Helper()
	for _, args := range [][]string{{"link", "add", tap, "type", "veth", "peer", "name", vm},
		{"link", "set", tap, "addrgenmode", "none"}, {"link", "set", vm, "addrgenmode", "none"},
		{"link", "set", tap, "up"}, {"link", "set", vm, "up"}} {
		sw.Run("ip", append([]string{"-n", sw.Netns}, args...)...)
	}
}

// rxPackets is how many frames a device in the switch's namespace received.
func rxPackets(t *testing.T, sw *ovstest.Switch, dev string) int {
	t.Helper()
	var links []struct {
		Stats struct {
			RX struct {
				Packets int `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(sw.Run("ip", "-n", sw.Netns, "-s", "-j", "link", "show", dev)), &links); err != nil || len(links) != 1 {
		t.Fatalf("the statistics of %s: %v", dev, err)
	}
	return links[0].Stats.RX.Packets
}
