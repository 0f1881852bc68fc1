package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"netshift.io/netshift/internal/lab/vm/guest"
	"netshift.io/netshift/internal/lab/vm/qmp"
)

// GuestInterval is the time between the datagrams of a QEMU guest's traffic
// by default: 50 a second. A guest under TCG on a 2-core machine cannot
// answer 500 a second while QEMU copies its memory away or warms up after
// the resume: its tap's queue overflowed and dropped hundreds of datagrams a
// migration, in either plug mode, where 50 a second show what the network
// does.
const GuestInterval = 20 * time.Millisecond

// QEMU runs the lab's guest image under TCG (these machines have no
// hardware virtualization), each VM a qemu-system-x86_64 process in its
// host's network namespace, as a hypervisor process runs on a node. Its tap
// is made by the lab when the VM is defined (persistent, up, the port's MTU),
// as libvirt makes it and hands it to QEMU; QEMU opens it by name.
//
// It needs a QEMU newer than Debian 12's 7.2, whose TCG migrations resumed
// this guest corrupted in a third to a half of them under a stream of 500
// datagrams a second (the guest's kernel found its lists or its virtqueue
// broken and panicked: "list_add corruption", "output.0:id 18 is not a
// head"), and in 4 of 12 in a lab at 50 a second; QEMU 10.0 from
// bookworm-backports (hack/setup.sh installs it) resumed 12 of 12 whole at
// 500 a second. A guest that crashed anyway is named as such (Crashed: its
// console's panic), never counted as the network's loss.
type QEMU struct {
	Image  guest.Image
	Binary string // default qemu-system-x86_64
	// MemoryMB is the guest's memory (default 128), which a migration copies.
	MemoryMB int
	// DowntimeLimit is the longest stop QEMU may choose for the last copy (default 50 ms).
	DowntimeLimit time.Duration
	// MigrationPort is where a target listens for its migration (on its host's address).
	MigrationPort int
	// PeerNetns is where the measured traffic comes from: the guest answers it.
	PeerNetns string
	Interval  time.Duration
	// Run runs a command (ip ...) and returns its output: the lab's shell.
	Run func(ctx context.Context, name string, args ...string) (string, error)
}

type qemuDomain struct {
	host   Host
	spec   Spec
	dir    string
	cmd    *exec.Cmd // nil until QEMU started
	exited chan struct{}
	qmp    *qmp.Client
	gone   bool // destroyed: its tap may be another domain's now
}

func (d *qemuDomain) Host() Host { return d.host }
func (d *qemuDomain) Spec() Spec { return d.spec }

// Define makes the VM's directory on its host and its tap.
func (q *QEMU) Define(ctx context.Context, host Host, spec Spec) (Domain, error) {
	d := &qemuDomain{host: host, spec: spec, dir: filepath.Join(host.Dir, spec.Name)}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("VM %s on %s: %w", spec.Name, host.Name, err)
	}
	if _, err := q.Run(ctx, "ip", "-n", host.Netns, "tuntap", "add", "dev", spec.Tap, "mode", "tap"); err != nil {
		return nil, fmt.Errorf("VM %s on %s: its tap %s: %w", spec.Name, host.Name, spec.Tap, err)
	}
	if _, err := q.Run(ctx, "ip", "-n", host.Netns, "link", "set", spec.Tap, "mtu", strconv.Itoa(spec.MTU), "up"); err != nil {
		_, _ = q.Run(context.Background(), "ip", "-n", host.Netns, "link", "del", spec.Tap)
		return nil, fmt.Errorf("VM %s on %s: its tap %s: %w", spec.Name, host.Name, spec.Tap, err)
	}
	return d, nil
}

func (q *QEMU) Start(ctx context.Context, d Domain) error {
	return q.launch(ctx, d.(*qemuDomain), false)
}

func (q *QEMU) StartIncoming(ctx context.Context, d Domain) error {
	return q.launch(ctx, d.(*qemuDomain), true)
}

// args is QEMU's command line: no devices but the console on a serial log
// file, the port's NIC (virtio-net, the port's MAC; no vnet header, so the
// guest sums its own packets, as the lab's userspace datapath needs), and
// QMP on a socket.
func (q *QEMU) args(d *qemuDomain, incoming bool) []string {
	mem := q.MemoryMB
	if mem == 0 {
		mem = 128
	}
	args := []string{"-name", d.spec.Name, "-accel", "tcg", "-machine", "pc", "-m", strconv.Itoa(mem), "-smp", "1",
		"-nodefaults", "-display", "none", "-no-reboot",
		"-serial", "file:" + filepath.Join(d.dir, "console.log"),
		"-kernel", q.Image.Kernel, "-initrd", q.Image.Initrd,
		"-append", "console=ttyS0 quiet panic=-1 netshift.ip=" + d.spec.IP,
		"-netdev", "tap,id=n0,ifname=" + d.spec.Tap + ",script=no,downscript=no,vnet_hdr=off",
		"-device", "virtio-net-pci,netdev=n0,romfile=,mac=" + d.spec.MAC,
		"-qmp", "unix:" + q.qmpSocket(d) + ",server=on,wait=off"}
	if incoming {
		args = append(args, "-incoming", fmt.Sprintf("tcp:%s:%d", d.host.Address, q.MigrationPort))
	}
	return args
}

func (q *QEMU) qmpSocket(d *qemuDomain) string { return filepath.Join(d.dir, "qmp.sock") }

// launch starts QEMU in the host's namespace, ended with the lab's command
// (nothing outlives a run), and connects to its QMP.
func (q *QEMU) launch(ctx context.Context, d *qemuDomain, incoming bool) error {
	bin := q.Binary
	if bin == "" {
		bin = "qemu-system-x86_64"
	}
	_ = os.Remove(q.qmpSocket(d))
	logf, err := os.Create(filepath.Join(d.dir, "qemu.log"))
	if err != nil {
		return fmt.Errorf("VM %s on %s: %w", d.spec.Name, d.host.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command("ip", append([]string{"netns", "exec", d.host.Netns, bin}, q.args(d, incoming)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("VM %s on %s: start QEMU: %w", d.spec.Name, d.host.Name, err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		d.qmp, err = qmp.Dial(dctx, q.qmpSocket(d))
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("VM %s on %s: QEMU exited at once: %s", d.spec.Name, d.host.Name, lastLines(filepath.Join(d.dir, "qemu.log")))
		case <-ctx.Done():
			return fmt.Errorf("VM %s on %s: waiting for QMP: %w", d.spec.Name, d.host.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("VM %s on %s: no QMP within 20s: %w", d.spec.Name, d.host.Name, err)
		}
	}
}

// Traffic sends from the peer to the guest, whose own program answers.
func (q *QEMU) Traffic(_ context.Context, d Domain) (*Traffic, error) {
	ip, _, _ := strings.Cut(d.Spec().IP, "/")
	t, err := StartTraffic(q.PeerNetns, ip, -1, q.Interval)
	if err != nil {
		return nil, fmt.Errorf("VM %s's peer: %w", d.Spec().Name, err)
	}
	return t, nil
}

// migrateStatus is what query-migrate answers.
type migrateStatus struct {
	Status    string  `json:"status"`
	Downtime  float64 `json:"downtime"`
	TotalTime float64 `json:"total-time"`
	Error     string  `json:"error-desc"`
}

// Migrate migrates over the hosts' underlay: the downtime limit set, QMP's
// migrate, query-migrate until it completes, then the target's RESUME.
func (q *QEMU) Migrate(ctx context.Context, from, to Domain) (Migration, error) {
	src, dst := from.(*qemuDomain), to.(*qemuDomain)
	var m Migration
	limit := q.DowntimeLimit
	if limit == 0 {
		limit = 50 * time.Millisecond
	}
	what := fmt.Sprintf("VM %s: migration %s -> %s", src.spec.Name, src.host.Name, dst.host.Name)
	if err := src.qmp.Execute(ctx, "migrate-set-parameters", map[string]any{"downtime-limit": limit.Milliseconds()}, nil); err != nil {
		return m, fmt.Errorf("%s: %w", what, err)
	}
	// With a return path the source's migration ends when the target has
	// loaded the guest and runs it, so the downtime QEMU reports spans the
	// whole stop, the target's part too, not only the source's.
	returnPath := map[string]any{"capabilities": []map[string]any{{"capability": "return-path", "state": true}}}
	for _, d := range []*qemuDomain{dst, src} {
		if err := d.qmp.Execute(ctx, "migrate-set-capabilities", returnPath, nil); err != nil {
			return m, fmt.Errorf("%s: on %s: %w", what, d.host.Name, err)
		}
	}
	stops, resumes := src.qmp.EventCount(), dst.qmp.EventCount()
	uri := fmt.Sprintf("tcp:%s:%d", dst.host.Address, q.MigrationPort)
	if err := src.qmp.Execute(ctx, "migrate", map[string]string{"uri": uri}, nil); err != nil {
		return m, fmt.Errorf("%s: %w", what, err)
	}
	st, err := q.waitMigrated(ctx, src)
	if err != nil {
		return m, fmt.Errorf("%s: %w", what, err)
	}
	m.DowntimeMs, m.TotalMs = st.Downtime, st.TotalTime
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resume, _, err := dst.qmp.WaitEvent(wctx, "RESUME", resumes)
	if err != nil {
		return m, fmt.Errorf("%s: the target did not resume: %w", what, err)
	}
	stop, _, err := src.qmp.WaitEvent(wctx, "STOP", stops)
	if err != nil {
		return m, fmt.Errorf("%s: the source never stopped: %w", what, err)
	}
	m.Stop, m.Resume = stop.Time, resume.Time
	return m, nil
}

func (q *QEMU) waitMigrated(ctx context.Context, src *qemuDomain) (migrateStatus, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st migrateStatus
		if err := src.qmp.Execute(ctx, "query-migrate", nil, &st); err != nil {
			return st, err
		}
		switch st.Status {
		case "completed":
			return st, nil
		case "failed", "cancelled":
			return st, fmt.Errorf("QEMU says %s: %s (see %s)", st.Status, st.Error, filepath.Join(src.dir, "qemu.log"))
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("still %q after 60s", st.Status)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Destroy asks QEMU to quit, kills it if it does not within 5 s, and removes
// the tap, as libvirt does when a domain ends.
func (q *QEMU) Destroy(ctx context.Context, d Domain) error {
	qd := d.(*qemuDomain)
	if qd.gone {
		return nil
	}
	qd.gone = true
	if qd.qmp != nil {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = qd.qmp.Execute(qctx, "quit", nil, nil)
		cancel()
		qd.qmp.Close()
		qd.qmp = nil
	}
	if qd.cmd != nil {
		select {
		case <-qd.exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-qd.cmd.Process.Pid, syscall.SIGKILL)
			<-qd.exited
		}
		qd.cmd = nil
	}
	if _, err := q.Run(ctx, "ip", "-n", qd.host.Netns, "link", "del", qd.spec.Tap); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		return fmt.Errorf("VM %s on %s: remove its tap: %w", qd.spec.Name, qd.host.Name, err)
	}
	return nil
}

// Crashed finds the guest kernel's last words on the VM's console.
func (q *QEMU) Crashed(d Domain) string {
	data, err := os.ReadFile(filepath.Join(d.(*qemuDomain).dir, "console.log"))
	if err != nil {
		return ""
	}
	var why []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, sign := range []string{"Kernel panic", "kernel BUG", "corruption", "is not a head", "segfault"} {
			if strings.Contains(line, sign) {
				why = append(why, strings.TrimSpace(line))
				break
			}
		}
	}
	return strings.Join(why, " | ")
}

// lastLines is the end of a log, for an error.
func lastLines(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	if s := strings.Join(lines, " | "); s != "" {
		return s
	}
	return "its log is empty"
}
