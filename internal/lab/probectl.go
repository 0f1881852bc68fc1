package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"netshift.io/netshift/internal/netdev"

	"netshift.io/netshift/internal/lab/probe"
)

// ProbeConfig is the probe of the lab's pods that are still there (on real
// nodes: the workload pods the API lists, entered through their sandboxes).
func (s *State) ProbeConfig(ctx context.Context, d time.Duration) (probe.Config, error) {
	cfg := probe.Config{Duration: d, InNetns: netdev.InNetns}
	pods, err := s.Pods(ctx)
	if err != nil {
		return cfg, err
	}
	for _, p := range pods {
		if p.Netns != "" {
			cfg.Pods = append(cfg.Pods, probe.Pod{Name: p.Name, Node: p.Node, Netns: p.Netns, IP: p.IP})
		}
	}
	return cfg, nil
}

// ProbeReportPath is where a background probe writes its report.
func (s *State) ProbeReportPath() string { return s.Path("probe-report.json") }

// StartProbe runs the probe in the background until StopProbe.
func StartProbe(name, binary string) error {
	s, err := LoadState(name)
	if err != nil {
		return err
	}
	if s.Probe != nil && s.Probe.Alive() {
		return fmt.Errorf("lab %s: a probe is already running (pid %d); `netshift lab probe stop --name %s` first", name, s.Probe.Pid, name)
	}
	_ = os.Remove(s.ProbeReportPath())
	logf, err := os.Create(s.Path("probe.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(binary, "lab", "probe", "--name", name, "--duration", "0", "--report-file", s.ProbeReportPath())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	p, err := Identify("probe", cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("the probe exited at once; see %s", logf.Name())
	}
	go func() { _ = cmd.Wait() }()
	return s.record(func() { s.Probe = &p })
}

// StopProbe ends the background probe and returns its report.
func StopProbe(name string) (probe.Report, error) {
	var r probe.Report
	s, err := LoadState(name)
	if err != nil {
		return r, err
	}
	if s.Probe == nil {
		return r, fmt.Errorf("lab %s: no probe is running (`netshift lab probe start --name %s`)", name, name)
	}
	s.Probe.Stop(30 * time.Second)
	data, err := os.ReadFile(s.ProbeReportPath())
	if err != nil {
		return r, fmt.Errorf("lab %s: the probe left no report (see %s): %w", name, s.Path("probe.log"), err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	return r, s.record(func() { s.Probe = nil })
}

// RunProbe runs the probe in this process, writing the report to reportFile
// when given.
func RunProbe(ctx context.Context, name string, d time.Duration, reportFile string) (probe.Report, error) {
	s, err := LoadState(name)
	if err != nil {
		return probe.Report{}, err
	}
	cfg, err := s.ProbeConfig(ctx, d)
	if err != nil {
		return probe.Report{}, err
	}
	_ = setSessionNice(os.Getpid(), probeNice)
	r, err := probe.Run(ctx, cfg)
	if err != nil {
		return r, err
	}
	if reportFile != "" {
		data, _ := json.MarshalIndent(r, "", "  ")
		tmp := reportFile + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return r, err
		}
		if err := os.Rename(tmp, reportFile); err != nil {
			return r, err
		}
	}
	return r, nil
}

// probeNice is the niceness the probe runs at (see priority.go). The probe
// sends and echoes every connection from one process on the cores the lab's
// nodes and control plane share; at the default weight a burst of the
// control plane (a change's plans and reports) kept its threads waiting for
// a processor for up to 33 ms, and the connections' "gap" was the probe's
// own. It uses the same CPU at any weight (about a third of a core at 3
// nodes, Report.Overhead); the weight only decides who waits when the cores
// are short. Where it is not allowed the probe runs as it is, and its
// report's stall says what that cost.
const probeNice = -10

// WriteProbeText prints a report for a person.
func WriteProbeText(w io.Writer, r probe.Report) {
	fmt.Fprintf(w, "probe ran %.1f s\n", r.DurationMs/1000)
	carried := "carried by a real-time thread"
	if !r.LongLivedRealtime {
		carried = fmt.Sprintf("not real time: gaps include the probe's own stalls, up to %.1f ms", r.Stall.MaxMs)
	}
	fmt.Fprintf(w, "long-lived connections (a message every 5 ms, %s):\n", carried)
	for _, l := range r.LongLived {
		state := "alive"
		if !l.Alive {
			state = "DIED: " + l.Error
		}
		fmt.Fprintf(w, "  %-10s -> %-10s %-6s longest gap %8.1f ms, %d echoes\n", l.From, l.To, state, l.MaxGapMs, l.Echoes)
	}
	fmt.Fprintf(w, "short-lived connections: %d attempts, %d failures %v\n", r.ShortLived.Attempts, r.ShortLived.Failures, reasons(r.ShortLived.Reasons))
	fmt.Fprintf(w, "HTTPS (certificate %d bytes): %d requests, %d failures (%d TLS, %d non-200) %v\n", r.HTTPS.CertBytes, r.HTTPS.Attempts, r.HTTPS.Failures, r.HTTPS.TLSFailures, r.HTTPS.Non200, reasons(r.HTTPS.Reasons))
	fmt.Fprintf(w, "probe overhead: %.2f s CPU, %.0f MiB peak memory\n", r.Overhead.CPUSeconds, r.Overhead.MaxRSSMiB)
	if r.OK {
		fmt.Fprintln(w, "OK: every connection survived, nothing failed")
	} else {
		for _, f := range r.Failed() {
			fmt.Fprintln(w, "FAILED:", f)
		}
	}
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return string(b)
}
