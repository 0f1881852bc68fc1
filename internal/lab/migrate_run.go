package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/lab/vm"
	"netshift.io/netshift/internal/lab/vm/guest"
	"netshift.io/netshift/internal/ovs"
	"netshift.io/netshift/internal/plug"
)

// The VM and its peer live on the lab's spanning switch ls-vm.
const (
	vmIP, vmMAC     = "198.18.250.10", "0a:58:c6:12:fa:0a"
	peerIP, peerMAC = "198.18.250.20", "0a:58:c6:12:fa:14"
	// qemuMigrationPort is where a target QEMU listens on its node's underlay address.
	qemuMigrationPort = 4444
)

// migration is one run's fixed parts.
type migration struct {
	s      *State
	sh     *shell
	c      client.Client
	nb     *ovs.Northbound
	sb     *ovs.Southbound
	o      MigrateOptions
	hv     vm.Hypervisor
	vmNS   string   // the namespace VM's own namespace
	peerNS string   // the peer's
	src    NodeSpec // node-1
	dst    NodeSpec // node-2
	peerOn NodeSpec // node-3
	echo   int      // the peer's answering socket (startPeer)
	// ending are the deleted pods whose sandboxes may still be torn down, by
	// node: the VM moves onto a node only once they are gone (settle).
	ending map[string][]string
}

// Migrate moves a VM between node-1 and node-2 of an OVN lab, Count times
// each way in each plug mode, alternating the modes, while it exchanges
// numbered datagrams with a peer on node-3, and counts what was lost.
func Migrate(ctx context.Context, name string, o MigrateOptions) (MigrateReport, error) {
	if err := o.Validate(); err != nil {
		return MigrateReport{}, err
	}
	if o.VM == "" {
		o.VM = VMNetns
	}
	if o.DowntimeLimit == 0 {
		o.DowntimeLimit = 50 * time.Millisecond
	}
	s, err := LoadState(name)
	if err != nil {
		return MigrateReport{}, err
	}
	if !s.Options.OVN || len(s.Topology.Nodes) < 3 {
		return MigrateReport{}, fmt.Errorf("lab %s: a migration needs an OVN lab of at least 3 nodes (netshift lab up --ovn --nodes 3)", name)
	}
	if !s.Ready {
		return MigrateReport{}, fmt.Errorf("lab %s is not ready", name)
	}
	if err := s.centralUp(); err != nil {
		return MigrateReport{}, fmt.Errorf("lab %s: a migration needs the VM switch of the central zone: %w", name, err)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	sh, err := newShell(s.Path("commands.log"))
	if err != nil {
		return MigrateReport{}, err
	}
	defer sh.close()
	c, err := s.Client()
	if err != nil {
		return MigrateReport{}, err
	}
	nb := ovs.NewNorthbound(s.NBDB())
	defer nb.Close()
	sbdb := ovs.NewSouthbound(s.SBDB())
	defer sbdb.Close()
	m := &migration{s: s, sh: sh, c: c, nb: nb, sb: sbdb, o: o, vmNS: fmt.Sprintf("%s%s-vm", NamePrefix, name),
		src: s.Topology.Nodes[0], dst: s.Topology.Nodes[1], peerOn: s.Topology.Nodes[2]}
	rep := MigrateReport{VM: o.VM, IntervalMs: ms(o.Interval), DatapathNice: o.DatapathNice}
	if o.DatapathNice != 0 {
		restore, err := m.raiseDatapath(o.DatapathNice)
		if err != nil {
			return rep, err
		}
		defer restore()
	}
	// Whatever an interrupted run left goes first, and this run's goes at the end.
	if err := m.reset(ctx); err != nil {
		return rep, err
	}
	defer func() { _ = m.reset(context.Background()) }()

	cleanupPeer, err := m.startPeer(ctx)
	if err != nil {
		return rep, err
	}
	defer cleanupPeer()
	if err := m.chooseHypervisor(ctx, &rep); err != nil {
		return rep, err
	}
	rep.PerPort.Realtime, rep.Direct.Realtime = true, true // until a round's thread is refused real time
	for round := 1; round <= o.Count; round++ {
		for _, mode := range []plug.Mode{plug.PerPort, plug.Direct} {
			figs := &rep.PerPort
			if mode == plug.Direct {
				figs = &rep.Direct
			}
			if err := m.round(ctx, round, mode, figs); err != nil {
				return rep, fmt.Errorf("%s round %d: %w", mode, round, err)
			}
		}
	}
	return rep, nil
}

// chooseHypervisor sets up what runs the VM: the namespace VM's namespace,
// or QEMU with the guest image (and its warm-up measured apart).
func (m *migration) chooseHypervisor(ctx context.Context, rep *MigrateReport) error {
	if m.o.VM == VMNetns {
		rep.PauseMs = ms(m.o.Pause)
		if err := m.ensureNetns(ctx, m.vmNS); err != nil {
			return err
		}
		m.hv = &vm.Netns{NS: m.vmNS, PeerIP: peerIP, PeerEcho: m.echo, Interval: m.o.Interval, Pause: m.o.Pause,
			Wire: m.wire, Unwire: m.unwire}
		return nil
	}
	rep.DowntimeLimitMs = ms(m.o.DowntimeLimit)
	img, err := guest.Build(guest.Sources{KernelDir: guest.KernelDir(), Busybox: "/bin/busybox",
		Echo: filepath.Join(m.o.Binaries, "netshift-guest-echo")}, m.s.Path("guest"))
	if err != nil {
		return fmt.Errorf("--vm qemu: %w", err)
	}
	q := &vm.QEMU{Image: img, DowntimeLimit: m.o.DowntimeLimit, MigrationPort: qemuMigrationPort, PeerNetns: m.peerNS,
		Interval: m.o.Interval, Run: func(ctx context.Context, name string, args ...string) (string, error) {
			return m.sh.run(ctx, nil, name, args...)
		}}
	fmt.Fprintf(m.o.Progress, "the guest (kernel %s) migrated twice between two QEMUs on one Linux bridge, for its own warm-up\n", img.Version)
	hostNS, peerNS := fmt.Sprintf("%s%s-wuhost", NamePrefix, m.s.Options.Name), fmt.Sprintf("%s%s-wupeer", NamePrefix, m.s.Options.Name)
	for _, ns := range []string{hostNS, peerNS} {
		if err := m.ensureNetns(ctx, ns); err != nil {
			return err
		}
	}
	w, err := vm.MeasureWarmup(ctx, *q, 2, hostNS, peerNS, m.s.Path("guest", "warmup"))
	if err != nil {
		return fmt.Errorf("--vm qemu: the guest's warm-up: %w", err)
	}
	rep.GuestWarmup = &WarmupFigures{Migrations: w.Migrations, ResumeGapMs: ms(w.ResumeGap), LostResumed: w.LostResumed,
		DowntimeMs: w.DowntimeMs, BootSeconds: w.Boot.Seconds(), StopResumeMs: ms(w.StopToResume)}
	fmt.Fprintf(m.o.Progress, "guest warm-up: booted in %.1f s; longest gap after a resume %.1f ms, %d lost after it, QEMU's downtime up to %.0f ms\n",
		w.Boot.Seconds(), ms(w.ResumeGap), w.LostResumed, w.DowntimeMs)
	m.hv = q
	return nil
}

// host is a node as the hypervisor sees it.
func (m *migration) host(n NodeSpec) vm.Host {
	return vm.Host{Name: n.Name, Netns: n.Netns, Address: n.UnderlayIP, Dir: filepath.Join(m.s.nodeDir(n.Name), "vms")}
}

// vmSpec is the round's VM: the port's MAC and tap, the lab's VM address.
func (m *migration) vmSpec(name string, port plug.Port) vm.Spec {
	return vm.Spec{Name: name, MAC: vmMAC, IP: vmIP + "/24", Tap: port.Tap, MTU: m.s.Options.MTU}
}

// wire and unwire are the namespace VM's interface on a node.
func (m *migration) wire(ctx context.Context, h vm.Host, spec vm.Spec) error {
	n, _ := m.s.Topology.Node(h.Name)
	return m.attach(ctx, n, spec.Tap, m.vmNS, vmMAC, vmIP, peerMAC, peerIP)
}

func (m *migration) unwire(ctx context.Context, h vm.Host, spec vm.Spec) error {
	return m.sh.ip(ctx, "-n", h.Netns, "link", "del", spec.Tap)
}

// bootWait is how long a new VM may take to answer: QEMU's guest boots under TCG.
func (m *migration) bootWait() time.Duration {
	if m.o.VM == VMQEMU {
		return 90 * time.Second
	}
	return 5 * time.Second
}

// round creates a VM on node-1 plugged in mode, moves it to node-2 and back,
// and removes it.
func (m *migration) round(ctx context.Context, round int, mode plug.Mode, figs *MigrationFigures) error {
	if err := m.setMode(ctx, mode); err != nil {
		return err
	}
	id := string(uuid.NewUUID())
	port := plug.Port{ID: id, MAC: vmMAC}.WithDefaults("")
	if err := m.addLogicalPort(ctx, id, vmMAC, vmIP); err != nil {
		return err
	}
	defer m.dropPort(context.Background(), id)
	base := fmt.Sprintf("vm-%s-%d", strings.ReplaceAll(string(mode), "-", ""), round)
	pod, dom, err := m.startVM(ctx, base+"-a", port)
	if err != nil {
		return err
	}
	traffic, err := m.hv.Traffic(ctx, dom)
	if err != nil {
		_ = m.hv.Destroy(context.Background(), dom)
		return err
	}
	figs.Realtime = figs.Realtime && traffic.Realtime()
	if err := m.waitFirstAnswers(ctx, traffic, id, mode, round, figs); err != nil {
		traffic.Close(0)
		_ = m.hv.Destroy(context.Background(), dom)
		return err
	}
	// Counted from here: the traffic flows (its first datagrams are the VM's start, not a migration's).
	first := traffic.Next()
	var windows []window
	at, other := m.src, m.dst
	names := []string{base + "-b", base + "-c"}
	for i := range 2 {
		res, w, newPod, newDom, err := m.migrateOnce(ctx, traffic, port, pod, dom, at, other, names[i])
		if err != nil {
			traffic.Close(0)
			_ = m.hv.Destroy(context.Background(), dom)
			if newDom != nil {
				_ = m.hv.Destroy(context.Background(), newDom)
			}
			var crash *guestCrash
			if errors.As(err, &crash) {
				return m.abandon(ctx, id, base, at, other, GuestCrash{Round: round, From: at.Name, To: other.Name, Why: crash.why}, mode, figs)
			}
			return err
		}
		w.res = res
		windows = append(windows, w)
		pod, dom, at, other = newPod, newDom, other, at
	}
	time.Sleep(100 * time.Millisecond)
	last := traffic.Next()
	sent, echoed := traffic.Close(300 * time.Millisecond)
	m.count(windows, sent, echoed, traffic.Repeats(), last, mode, round, figs)
	lost, gap := vm.ExchangeFigures(sent, echoed, first, last)
	figs.Lost += lost
	figs.Sent += last - first
	figs.MaxGapMs = max(figs.MaxGapMs, ms(gap))

	// The VM goes.
	if err := m.hv.Destroy(ctx, dom); err != nil {
		return err
	}
	if err := m.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	m.ended(at, pod.Name)
	return m.waitUnplugged(ctx, at, id)
}

// define defines the VM on node n. QEMU's tap exists from now on; the
// namespace VM's appears when it is wired.
func (m *migration) define(ctx context.Context, n NodeSpec, spec vm.Spec) (vm.Domain, error) {
	d, err := m.hv.Define(ctx, m.host(n), spec)
	if err != nil || m.o.VM != VMQEMU {
		return d, err
	}
	if err := m.upOnceAttached(ctx, n, spec.Tap); err != nil {
		_ = m.hv.Destroy(context.Background(), d)
		return nil, fmt.Errorf("VM %s on %s: %w", spec.Name, n.Name, err)
	}
	return d, nil
}

// startVM creates the VM's pod on node-1, defines and starts the VM there,
// and waits until netshift has plugged it and OVN bound it.
func (m *migration) startVM(ctx context.Context, name string, port plug.Port) (*corev1.Pod, vm.Domain, error) {
	pod, err := m.createPod(ctx, name, m.src.Name, port, "")
	if err != nil {
		return nil, nil, err
	}
	dom, err := m.define(ctx, m.src, m.vmSpec(name, port))
	if err != nil {
		return nil, nil, err
	}
	err = m.hv.Start(ctx, dom)
	if err == nil {
		_, err = m.waitPort(ctx, pod.Name, func(c corev1.PodCondition) bool { return c.Status == corev1.ConditionTrue })
	}
	if err == nil {
		err = m.waitChassis(ctx, port.ID, m.src.Name, false)
	}
	if err == nil {
		err = m.waitRunning(ctx, pod.Name)
	}
	if err == nil {
		err = m.settle(ctx, m.src)
	}
	if err != nil {
		_ = m.hv.Destroy(context.Background(), dom)
		return nil, nil, err
	}
	return pod, dom, nil
}

// waitFirstAnswers waits until the new VM answers 20 datagrams.
//
// Rarely (twice in some 600 rounds here) a round's new port reached nothing
// for 10 s, before any migration, for a cause not found yet. As for a lab pod
// that stays unreachable (see waitConnected), OVN's view is recorded, every
// ovn-controller recomputes, the round waits again, and the report counts it.
func (m *migration) waitFirstAnswers(ctx context.Context, t *vm.Traffic, id string, mode plug.Mode, round int, figs *MigrationFigures) error {
	err := t.WaitEchoes(0, 20, m.bootWait())
	if err == nil {
		return nil
	}
	m.s.recordOVN(ctx, id, m.src.Name, "the VM's port "+id)
	figs.Recomputed++
	fmt.Fprintf(m.o.Progress, "%-8s %d: the VM on %s answered nothing for %s (%v): OVN's view in %s; every ovn-controller recomputed\n",
		mode, round, m.src.Name, m.bootWait(), err, m.s.Path("connectivity.log"))
	if err := t.WaitEchoes(0, 20, 10*time.Second); err != nil {
		return fmt.Errorf("VM on %s before any migration: %w", m.src.Name, err)
	}
	return nil
}

// window is a migration's datagrams by sequence number: from its start (the
// target prepared while the VM runs on the source) to the VM's stop, to its
// resume, to the completion, and on to the next migration's start.
type window struct {
	start, stop, resume, completion int
	// downtime is the first datagram sent in the hypervisor's downtime
	// before the resume (its length, ended at the resume).
	downtime int
	resumeAt time.Duration // since the traffic started
	res      MigrationResult
}

// count splits each migration's datagrams into its windows and adds them to
// the figures. A datagram's wait depends only on it and later echoes: the
// migration's loss and longest gap are its windows' sum and maximum.
func (m *migration) count(windows []window, sent, echoed []time.Duration, repeats map[int]int, last int, mode plug.Mode, round int, figs *MigrationFigures) {
	for i := range windows {
		to := last
		if i+1 < len(windows) {
			to = windows[i+1].start
		}
		w := &windows[i]
		// The last datagram sent before QEMU stopped the guest, never answered,
		// was on its way: it reached the stopped VM (QEMU's bound's "plus one").
		// The namespace VM's traffic waits for its answers before it stops.
		if m.o.VM == VMQEMU && w.stop > w.start && w.stop <= len(echoed) && echoed[w.stop-1] == 0 {
			w.stop--
		}
		bounds := []int{w.start, w.stop, w.resume, w.completion, to}
		var lost [4]int
		var gaps [4]time.Duration
		for k := range 4 {
			lost[k], gaps[k] = vm.ExchangeFigures(sent, echoed, bounds[k], bounds[k+1])
		}
		r := &w.res
		r.LostBeforeResume, r.LostWhileStopped, r.LostAtResume, r.LostAtCompletion = lost[0], lost[1], lost[2], lost[3]
		r.SentWhileStopped = w.resume - w.stop
		for j := w.resume; j < min(w.completion, len(echoed)); j++ {
			if echoed[j] == 0 {
				r.LostAtResumeSentMs = append(r.LostAtResumeSentMs, ms(sent[j]-w.resumeAt))
			}
		}
		if m.o.VM == VMQEMU {
			r.StoppedBound = w.resume - w.downtime + 1
			if r.LostWhileStopped > r.StoppedBound {
				figs.OverStoppedBound++
			}
		}
		if !r.ReadyBeforeResume {
			figs.NotReadyBeforeResume++
		}
		r.Lost = lost[0] + lost[1] + lost[2] + lost[3]
		for seq := w.start; seq < min(to, len(sent)); seq++ {
			if n := repeats[seq]; n > 0 {
				r.EchoedTwice += n
				r.EchoedTwiceSentMs = append(r.EchoedTwiceSentMs, ms(sent[seq]-w.resumeAt))
			}
		}
		figs.EchoedTwice += r.EchoedTwice
		at := slices.Index(gaps[:], slices.Max(gaps[:]))
		r.GapMs, r.GapAt = ms(gaps[at]), []string{"prepared", "stopped", "resume", "completion"}[at]
		r.ResumeGapMs = ms(max(gaps[2], gaps[3]))
		figs.LostBeforeResume += r.LostBeforeResume
		figs.LostWhileStopped += r.LostWhileStopped
		figs.LostAtResume += r.LostAtResume
		figs.LostAtCompletion += r.LostAtCompletion
		figs.Each = append(figs.Each, *r)
		figs.Migrations++
		bound, twice := "", ""
		if r.StoppedBound > 0 {
			bound = fmt.Sprintf(", may %d", r.StoppedBound)
		}
		if r.EchoedTwice > 0 {
			twice = fmt.Sprintf(", %d answered twice", r.EchoedTwice)
		}
		fmt.Fprintf(m.o.Progress, "%-8s %d: %s -> %s  lost %d (%d while the target was prepared, %d of %d while stopped%s, %d at resume, %d at completion%s), longest gap %.1f ms (%s), stop to resume %.1f ms (the hypervisor's downtime %.0f ms), target ready %.0f ms before the resume (plugged in %.0f ms), bound on the target alone %.0f ms after the source pod's deletion\n",
			mode, round, r.From, r.To, r.Lost, r.LostBeforeResume, r.LostWhileStopped, r.SentWhileStopped, bound, r.LostAtResume, r.LostAtCompletion, twice,
			r.GapMs, r.GapAt, r.StopToResumeMs, r.DowntimeMs, r.ReadyAheadMs, r.PrepareMs, r.HandOverMs)
	}
	var handOvers, downtimes, stops, resumeGaps []float64
	for _, r := range figs.Each {
		handOvers = append(handOvers, r.HandOverMs)
		downtimes = append(downtimes, r.DowntimeMs)
		stops = append(stops, r.StopToResumeMs)
		resumeGaps = append(resumeGaps, r.ResumeGapMs)
	}
	figs.HandOverMsP50, figs.HandOverMsMax = medianAndMax(handOvers)
	figs.DowntimeMsP50, figs.DowntimeMsMax = medianAndMax(downtimes)
	figs.StopToResumeMsP50, _ = medianAndMax(stops)
	figs.ResumeGapMsP50, figs.ResumeGapMsMax = medianAndMax(resumeGaps)
}

// migrateOnce moves the VM from `from` to `to` as Nova and KubeVirt do: the
// target pod (the same port) is created and the target VM defined and
// started incoming (QEMU's tap appears there now); once netshift reports the
// target ready (or, for the namespace VM in direct mode, waiting for its
// device, which appears only at the resume), the hypervisor migrates; the
// source VM and pod then go, and the port is the target's alone.
func (m *migration) migrateOnce(ctx context.Context, t *vm.Traffic, port plug.Port, source *corev1.Pod, srcDom vm.Domain,
	from, to NodeSpec, name string) (MigrationResult, window, *corev1.Pod, vm.Domain, error) {
	res := MigrationResult{From: from.Name, To: to.Name}
	w := window{start: t.Next()}
	start := time.Now()
	target, err := m.createPod(ctx, name, to.Name, port, source.Name)
	if err != nil {
		return res, w, nil, nil, err
	}
	dstDom, err := m.define(ctx, to, m.vmSpec(name, port))
	if err != nil {
		return res, w, nil, nil, err
	}
	if err := m.hv.StartIncoming(ctx, dstDom); err != nil {
		return res, w, nil, dstDom, err
	}
	readyAt, err := m.waitTargetPrepared(ctx, target.Name)
	if err != nil {
		return res, w, nil, dstDom, err
	}
	res.PrepareMs = ms(time.Since(start))
	if err := m.waitChassis(ctx, port.ID, from.Name+","+to.Name, true); err != nil {
		return res, w, nil, dstDom, err
	}
	if err := m.waitRunning(ctx, target.Name); err != nil {
		return res, w, nil, dstDom, err
	}
	if err := m.settle(ctx, to); err != nil {
		return res, w, nil, dstDom, err
	}

	mig, err := m.hv.Migrate(ctx, srcDom, dstDom)
	if err != nil {
		return res, w, nil, dstDom, err
	}
	if readyAt.IsZero() { // the namespace VM, direct: ready once its tap appeared at the resume
		if _, err := m.waitPort(ctx, target.Name, func(c corev1.PodCondition) bool { return c.Status == corev1.ConditionTrue }); err != nil {
			return res, w, nil, dstDom, err
		}
	} else {
		// Ready before the resume, and still ready after it: a condition that fell back
		// in between was not ready when the VM came.
		cond, err := m.waitPort(ctx, target.Name, func(corev1.PodCondition) bool { return true })
		if err != nil {
			return res, w, nil, dstDom, err
		}
		res.ReadyAheadMs = ms(mig.Resume.Sub(readyAt))
		res.ReadyBeforeResume = readyAt.Before(mig.Resume) && cond.Status == corev1.ConditionTrue &&
			!cond.LastTransitionTime.After(readyAt)
	}
	res.StopToResumeMs, res.DowntimeMs, res.TotalMs = ms(mig.Resume.Sub(mig.Stop)), mig.DowntimeMs, mig.TotalMs
	w.stop, w.resume, w.resumeAt = t.SeqAt(mig.Stop), t.SeqAt(mig.Resume), mig.Resume.Sub(t.Started())
	w.downtime = t.SeqAt(mig.Resume.Add(-time.Duration(mig.DowntimeMs * float64(time.Millisecond))))
	if err := t.WaitEchoes(w.resume, 20, 5*time.Second); err != nil {
		if why := m.hv.Crashed(dstDom); why != "" {
			return res, w, nil, dstDom, &guestCrash{why: why}
		}
		return res, w, nil, dstDom, fmt.Errorf("VM on %s after its migration from %s: %w", to.Name, from.Name, err)
	}
	// The migration is over: the source VM ends (libvirt destroys the paused
	// source domain), then its pod goes, and the port is the target's alone.
	if err := m.hv.Destroy(ctx, srcDom); err != nil {
		return res, w, nil, dstDom, err
	}
	w.completion = t.Next()
	res.HandOverMs, err = m.handOver(ctx, source, port.ID, from, to)
	if err != nil {
		return res, w, nil, dstDom, err
	}
	return res, w, target, dstDom, nil
}

// guestCrash is a guest that died after its resume: the guest's loss, not
// the network's.
type guestCrash struct{ why string }

func (c *guestCrash) Error() string {
	return "the guest crashed after its resume (QEMU under TCG), not the network: " + c.why
}

// abandon ends a round whose guest crashed: the figures count the crash and
// none of the round's traffic (a dead guest answers nothing), its pods go,
// and the run goes on with the next round.
func (m *migration) abandon(ctx context.Context, id, base string, from, to NodeSpec, crash GuestCrash, mode plug.Mode, figs *MigrationFigures) error {
	figs.GuestCrashes = append(figs.GuestCrashes, crash)
	fmt.Fprintf(m.o.Progress, "%-8s %d: %s -> %s  the guest crashed after its resume (QEMU under TCG): %s; the round's traffic is not counted\n",
		mode, crash.Round, crash.From, crash.To, crash.Why)
	for _, suffix := range []string{"-a", "-b", "-c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: PodNamespace, Name: base + suffix}}
		if err := m.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		for _, n := range []NodeSpec{from, to} {
			m.ended(n, pod.Name)
		}
	}
	for _, n := range []NodeSpec{from, to} {
		if err := m.waitUnplugged(ctx, n, id); err != nil {
			return err
		}
	}
	return nil
}

// waitTargetPrepared waits until the target pod's port is ready, and returns
// when the lab saw it ready; a namespace VM's target in direct mode waits for
// its device instead (zero time: not ready).
func (m *migration) waitTargetPrepared(ctx context.Context, pod string) (time.Time, error) {
	cond, err := m.waitPort(ctx, pod, func(c corev1.PodCondition) bool {
		return c.Status == corev1.ConditionTrue || (m.o.VM == VMNetns && c.Reason == "WaitingForDevice")
	})
	if err != nil || cond.Status != corev1.ConditionTrue {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// handOver deletes the source pod and waits until the port is bound on the
// target alone, unplugged from the source and installed everywhere; it
// returns the time from the deletion to the binding.
func (m *migration) handOver(ctx context.Context, source *corev1.Pod, id string, from, to NodeSpec) (float64, error) {
	deleted := time.Now()
	if err := m.c.Delete(ctx, source, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	if err := m.waitBoundAlone(ctx, id, to.Name); err != nil {
		return 0, err
	}
	took := ms(time.Since(deleted))
	if err := m.waitChassis(ctx, id, to.Name, false); err != nil {
		return took, err
	}
	if err := m.waitUnplugged(ctx, from, id); err != nil {
		return took, err
	}
	m.ended(from, source.Name)
	// The migration is over once every ovn-controller has installed the
	// hand-over: the next one starts from there, not on top of it.
	_, err := m.s.nbctl(ctx, m.sh, "--wait=hv", "sync")
	return took, err
}
