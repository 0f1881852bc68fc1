// Package probe measures what a network change does to live traffic between
// the lab's pods, following the test plan of the live MTU/port change design:
// long-lived TCP connections exchanging a message every 5 ms (did each
// survive, and what was its longest silence), many short-lived TCP
// connections (attempts and failures), and HTTPS requests to a server whose
// certificate is far larger than 16 KB, so every handshake needs full-size
// segments (attempts, TLS failures, non-200 answers).
//
// Every socket is opened inside a pod's network namespace by this one
// process; no traffic leaves the namespaces the lab created.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Pod is where the probe listens and dials from.
type Pod struct {
	Name, Node, Netns, IP string
}

// Config is one probe run.
type Config struct {
	Pods []Pod
	// Duration of the run; 0 runs until the context ends.
	Duration time.Duration
	// Interval between messages on a long-lived connection (5 ms).
	Interval time.Duration
	// InNetns runs fn inside a named network namespace (netdev.InNetns).
	InNetns func(netns string, fn func() error) error
	// Settled, when set, is closed once every long-lived connection has had
	// its first echo (or failed to connect): what is measured from then on
	// is the traffic of a running probe.
	Settled chan<- struct{}
}

// LongLived is one long-lived connection's fate.
type LongLived struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Alive    bool    `json:"alive"`
	MaxGapMs float64 `json:"maxGapMs"`
	// MaxGapEnded is when the longest gap ended (its first echo after), so
	// that a gap can be laid beside the change's step times.
	MaxGapEnded time.Time `json:"maxGapEnded,omitzero"`
	Echoes      int       `json:"echoes"`
	Error       string    `json:"error,omitempty"`
}

// Longest is the longest of some lateness seen over a run, and when it ended.
type Longest struct {
	MaxMs float64 `json:"maxMs"`
	// Ended is when the longest one ended.
	Ended time.Time `json:"ended,omitzero"`
}

// note keeps late, which ended at ended, if it is the longest so far.
func (l *Longest) note(late time.Duration, ended time.Time) {
	if ms := float64(late.Microseconds()) / 1000; ms > l.MaxMs {
		l.MaxMs, l.Ended = ms, ended
	}
}

// Stall is how late the probe's own ticker ran, at worst.
type Stall = Longest

// Pause is how long the machine stood still, at worst.
type Pause struct {
	Longest
	// Realtime says the watching thread ran real time; if not, what it saw
	// includes the waits of any thread of the machine.
	Realtime bool `json:"realtime"`
}

// Counter counts attempts and failures, with the most common reasons.
type Counter struct {
	Attempts int            `json:"attempts"`
	Failures int            `json:"failures"`
	Reasons  map[string]int `json:"reasons,omitempty"`
}

// HTTPS counts HTTPS requests.
type HTTPS struct {
	Counter
	TLSFailures int `json:"tlsFailures"`
	Non200      int `json:"non200"`
	// CertBytes is the size of the server's certificate.
	CertBytes int `json:"certBytes"`
}

// Overhead is what the probe itself cost.
type Overhead struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	MaxRSSMiB  float64 `json:"maxRSSMiB"`
}

// Report is the probe's result; its JSON is what the other issues quote.
type Report struct {
	DurationMs float64     `json:"durationMs"`
	LongLived  []LongLived `json:"longLived"`
	ShortLived Counter     `json:"shortLived"`
	HTTPS      HTTPS       `json:"https"`
	Overhead   Overhead    `json:"overhead"`
	// Stall is the probe's own longest stall: the longest a 1 ms ticker of
	// its own ran late. The probe sends and echoes from one process on the
	// machine whose nodes it measures; a gap no longer than a stall at the
	// same time may be the probe's, not the network's.
	Stall Stall `json:"stall"`
	// Pause is the machine's longest pause: the longest a real-time thread of
	// the probe slept beyond its millisecond. A gap no longer than a pause at
	// the same time is the machine's (its host did not run it), not the
	// network's.
	Pause Pause `json:"pause"`
	// LongLivedRealtime says the long-lived connections were carried by a
	// real-time thread (see liveLoop); if not, their gaps include the probe's
	// own waits for a processor, up to its Stall.
	LongLivedRealtime bool `json:"longLivedRealtime"`
	// OK is false when a long-lived connection died or anything failed.
	OK bool `json:"ok"`
}

// Failed lists what makes the report not OK.
func (r Report) Failed() []string {
	var out []string
	for _, l := range r.LongLived {
		if !l.Alive {
			out = append(out, fmt.Sprintf("long-lived %s -> %s died: %s", l.From, l.To, l.Error))
		}
	}
	if r.ShortLived.Failures > 0 {
		out = append(out, fmt.Sprintf("%d of %d short-lived connections failed", r.ShortLived.Failures, r.ShortLived.Attempts))
	}
	if r.HTTPS.Failures > 0 {
		out = append(out, fmt.Sprintf("%d of %d HTTPS requests failed (%d TLS, %d non-200)", r.HTTPS.Failures, r.HTTPS.Attempts, r.HTTPS.TLSFailures, r.HTTPS.Non200))
	}
	if len(r.LongLived) == 0 && r.ShortLived.Attempts == 0 {
		out = append(out, "nothing was measured: the probe needs pods on at least two nodes")
	}
	return out
}

const (
	echoPort  = 7070
	shortPort = 7071
	httpsPort = 8443
)

// Run runs the probe and returns its report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Millisecond
	}
	var r Report
	pairs := ring(cfg.Pods)
	if len(pairs) == 0 {
		r.OK = false
		return r, errors.New("the probe needs pods on at least two nodes")
	}
	before := rusage()
	runCtx, cancel := context.WithCancel(ctx)
	if cfg.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
	}
	defer cancel()
	// The loop of the long-lived connections holds a processor of the
	// runtime for good, as does the pause watcher: one more each.
	procs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(procs + 2)
	defer runtime.GOMAXPROCS(procs)
	loop := newLiveLoop(cfg.Interval)
	go loop.run(runCtx)
	srv, err := startServers(cfg, loop)
	if err != nil {
		cancel()
		<-loop.done
		return r, err
	}
	defer srv.close()
	r.HTTPS.CertBytes = srv.certBytes

	start := time.Now()
	var wg sync.WaitGroup
	r.LongLived = make([]LongLived, len(pairs))
	var settling sync.WaitGroup
	settling.Add(len(pairs))
	if cfg.Settled != nil {
		go func() { settling.Wait(); close(cfg.Settled) }()
	}
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			longLived(cfg, loop, p[0], p[1], net.JoinHostPort(p[1].IP, strconv.Itoa(echoPort)), &r.LongLived[i], sync.OnceFunc(settling.Done))
		}()
	}
	short := &counter{reasons: map[string]int{}}
	for _, p := range pairs {
		wg.Add(1)
		go func() { defer wg.Done(); shortLived(runCtx, cfg, p[0], p[1], short) }()
	}
	stall := make(chan Stall, 1)
	go func() { stall <- ownStalls(runCtx) }()
	pause := make(chan Pause, 1)
	go func() { pause <- machinePauses(runCtx) }()
	https := &httpsCounter{counter: counter{reasons: map[string]int{}}}
	for _, p := range cfg.Pods {
		if p.Node != srv.httpsPod.Node {
			wg.Add(1)
			go func() { defer wg.Done(); httpsClient(runCtx, cfg, p, srv, https) }()
		}
	}
	wg.Wait()
	<-loop.done
	r.LongLivedRealtime = loop.realtime
	r.Stall, r.Pause = <-stall, <-pause
	r.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	r.ShortLived = short.snapshot()
	r.HTTPS.Counter = https.snapshot()
	r.HTTPS.TLSFailures, r.HTTPS.Non200 = https.tls, https.non200
	after := rusage()
	r.Overhead = Overhead{CPUSeconds: after.cpu - before.cpu, MaxRSSMiB: after.maxRSS}
	r.OK = len(r.Failed()) == 0
	return r, nil
}

// stallTick is the period of the probe's own ticker (see Report.Stall).
const stallTick = time.Millisecond

// ownStalls measures, until ctx ends, the longest time between two ticks of
// a ticker of stallTick beyond the tick itself: how long the probe's
// goroutines could not run.
func ownStalls(ctx context.Context) (s Stall) {
	tick := time.NewTicker(stallTick)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return s
		case <-tick.C:
			now := time.Now() // the tick's value is when it was due, not when it ran
			s.note(now.Sub(last)-stallTick, now)
			last = now
		}
	}
}

// ring pairs each pod with the pod of the same rank on the next node, so
// every node talks to another node and every pod takes part.
func ring(pods []Pod) [][2]Pod {
	byNode := map[string][]Pod{}
	var nodes []string
	for _, p := range pods {
		if _, ok := byNode[p.Node]; !ok {
			nodes = append(nodes, p.Node)
		}
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	sort.Strings(nodes)
	if len(nodes) < 2 {
		return nil
	}
	var pairs [][2]Pod
	for i, n := range nodes {
		next := byNode[nodes[(i+1)%len(nodes)]]
		for j, p := range byNode[n] {
			pairs = append(pairs, [2]Pod{p, next[j%len(next)]})
		}
	}
	return pairs
}

// dial connects from a pod's namespace.
func dial(cfg Config, from Pod, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := cfg.InNetns(from.Netns, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	return c, err
}

// longLived dials one long-lived connection and hands it to the loop, which
// fills res.
func longLived(cfg Config, loop *liveLoop, from, to Pod, addr string, res *LongLived, settled func()) {
	*res = LongLived{From: from.Name, To: to.Name}
	conn, err := dial(cfg, from, addr, 3*time.Second)
	if err == nil {
		if err = loop.addClient(conn, res, settled); err != nil {
			_ = conn.Close()
		}
	}
	if err != nil {
		res.Error = err.Error()
		settled() // a connection that never echoes settles as it ends
		return
	}
	go func() { <-loop.done; _ = conn.Close() }()
}

// shortLivedPause is the pause between two short-lived connections of a
// pair: about 20 connections a second per pair, every stage of a change
// crossed by several. Each packet of the lab crosses two userspace datapaths
// on the same few cores, so a 10 ms pause cost ovs-vswitchd 0.8 of a core
// at 3 nodes, and the probe loaded the machine whose silences it measures.
const shortLivedPause = 50 * time.Millisecond

// shortLived opens, uses and closes connections from one pod to another,
// shortLivedPause apart.
func shortLived(ctx context.Context, cfg Config, from, to Pod, c *counter) {
	addr := net.JoinHostPort(to.IP, strconv.Itoa(shortPort))
	for ctx.Err() == nil {
		err := func() error {
			conn, err := dial(cfg, from, addr, 2*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := conn.Write([]byte{1}); err != nil {
				return err
			}
			b := make([]byte, 1)
			_, err = io.ReadFull(conn, b)
			return err
		}()
		if ctx.Err() != nil && err != nil {
			return // cut short by the end of the run, not by the network
		}
		c.add(err)
		time.Sleep(shortLivedPause)
	}
}

type counter struct {
	mu       sync.Mutex
	attempts int
	failures int
	reasons  map[string]int
}

func (c *counter) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts++
	if err != nil {
		c.failures++
		c.reasons[reason(err)]++
	}
}

func (c *counter) snapshot() Counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counter{Attempts: c.attempts, Failures: c.failures}
	if len(c.reasons) > 0 {
		out.Reasons = map[string]int{}
		for k, v := range c.reasons {
			out.Reasons[k] = v
		}
	}
	return out
}

// reason reduces an error to a short class, so reports stay small.
func reason(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed early"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	}
	return "other: " + err.Error()
}

type usage struct{ cpu, maxRSS float64 }

func rusage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return usage{cpu: cpu.Seconds(), maxRSS: float64(ru.Maxrss) / 1024}
}
