package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"netshift.io/netshift/internal/apicount"
	"netshift.io/netshift/internal/lab"
)

// Usage is what a process spent: CPU (user and system) and its peak resident memory.
type Usage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	pid        int
	startTicks float64
}

// clockTicks is the kernel's USER_HZ, which /proc/PID/stat counts CPU time in.
const clockTicks = 100

// cpuTicks reads a process's user and system CPU time, in clock ticks.
func cpuTicks(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command may hold spaces and parentheses: the fields start after the last ')'.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	return utime + stime, nil
}

// peakRSS reads a process's peak resident memory (VmHWM), in MiB.
func peakRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// meter measures a process from now on.
func meter(pid int) *Usage {
	t, _ := cpuTicks(pid)
	return &Usage{pid: pid, startTicks: t}
}

// read fills in what the process spent since meter (its peak memory over its whole life).
func (u *Usage) read() {
	if t, err := cpuTicks(u.pid); err == nil {
		u.CPUSeconds = (t - u.startTicks) / clockTicks
	}
	if m, err := peakRSS(u.pid); err == nil {
		u.PeakRSSMiB = m
	}
}

// childNamed finds this process's child whose executable is named name (the
// API server and etcd envtest started).
func childNamed(name string) (int, error) {
	for _, p := range lab.ChildrenOf(os.Getpid()) {
		if p.Comm == name[:min(len(name), 15)] { // the kernel keeps 15 bytes of a command's name
			return p.Pid, nil
		}
	}
	return 0, fmt.Errorf("no child process %s", name)
}

// selfUsage measures this process (the simulated agents).
func selfUsage() *Usage { return meter(os.Getpid()) }

// freeAddr is a free loopback address:port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scrapeRequests reads the operator's netshift_operator_api_requests_total from its metrics endpoint.
func scrapeRequests(ctx context.Context, metricsURL string) (map[apicount.Key]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the operator's metrics %s: %w", metricsURL, err)
	}
	defer resp.Body.Close()
	all, _, err := parseRequests(resp.Body, operatorRequests)
	return all, err
}

// operatorRequests is the operator's count of its API requests.
const operatorRequests = "netshift_operator_api_requests_total"

// apiServerRequests is the API server's count of the requests it served.
const apiServerRequests = "apiserver_request_total"

// scrapeAPIServer reads the API server's apiserver_request_total, summed over codes and
// scopes, by verb (create, update, patch, delete, get, list, watch) and resource; and
// apart, those it answered 429 (too many requests).
func scrapeAPIServer(ctx context.Context, cfg *rest.Config) (all, tooMany map[apicount.Key]int64, err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := cs.RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the API server's metrics: %w", err)
	}
	defer body.Close()
	return parseRequests(body, apiServerRequests)
}

// parseRequests sums metric{...,resource="..",verb="..",...} N lines by verb and
// resource: all of them, and apart those of code 429. The API server's priority and
// fairness answers 429 to a request that waited too long in its queue, and client-go
// sends it again: one write, counted twice or more.
func parseRequests(r io.Reader, metric string) (all, tooMany map[apicount.Key]int64, err error) {
	all, tooMany = map[apicount.Key]int64{}, map[apicount.Key]int64{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line, ok := strings.CutPrefix(s.Text(), metric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		var k apicount.Key
		var code string
		for _, kv := range strings.Split(labels, ",") {
			name, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch name {
			case "verb":
				k.Verb = apicount.VerbOfAPIServer(v)
			case "resource":
				k.Resource = v
			case "code":
				code = v
			}
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("metric line %q: %w", s.Text(), err)
		}
		all[k] += int64(n)
		if code == "429" {
			tooMany[k] += int64(n)
		}
	}
	return all, tooMany, s.Err()
}
