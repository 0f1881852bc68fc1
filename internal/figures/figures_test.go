package figures

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkLiveChangeGap/nodes=3-2         	       1	60123456789 ns/op	        40.5 mtu-down-gap-ms	  12.0 live-mtu-s	  96.0 reboot-mtu-s
    bench_test.go:120: a log line 1 2 3
BenchmarkLiveChangeGap/nodes=3-2         	       1	60123456789 ns/op	        61.5 mtu-down-gap-ms	  10.0 live-mtu-s	  90.0 reboot-mtu-s
BenchmarkLiveChangeGap/nodes=3-2         	       1	60123456789 ns/op	        30.0 mtu-down-gap-ms	  11.0 live-mtu-s	  99.0 reboot-mtu-s
PASS
ok  	netshift.io/netshift/test/e2e	190.2s
BenchmarkFullDecision/nodes=5000/pools=50-2   200   12300000 ns/op   5000 B/op   12 allocs/op
BenchmarkPortPools-2   1   9 ns/op   3.5 decision-p99-µs   0.24 neutron-requests/pod
`

func TestParseCollectsEveryRunOfEveryMetric(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := res["BenchmarkLiveChangeGap/nodes=3"]["mtu-down-gap-ms"]; len(got) != 3 || got[0] != 40.5 || got[2] != 30 {
		t.Errorf("mtu-down-gap-ms = %v, want the three runs in order", got)
	}
	if got := res["BenchmarkPortPools"]["decision-p99-µs"]; len(got) != 1 || got[0] != 3.5 {
		t.Errorf("a unit with a non-ASCII letter: %v", got)
	}
	if got := res["BenchmarkFullDecision/nodes=5000/pools=50"]["allocs/op"]; len(got) != 1 || got[0] != 12 {
		t.Errorf("allocs/op = %v", got)
	}
}

func TestParseRefusesAResultLineThatDoesNotPair(t *testing.T) {
	_, err := Parse(strings.NewReader("BenchmarkX-2  1  12 ns/op 40\n"))
	if err == nil || !strings.Contains(err.Error(), "BenchmarkX") {
		t.Fatalf("err = %v, want one naming the line", err)
	}
}

func TestComputeMediansRangesRatiosAndVerdicts(t *testing.T) {
	res, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	figs := Compute(Rows, Jobs, res)
	byWhat := map[string]Figure{}
	for _, f := range figs {
		byWhat[f.What] = f
	}
	gap := byWhat["MTU −100, longest gap of any long-lived connection (3 nodes)"]
	if gap.Median != 40.5 || gap.Min != 30 || gap.Max != 61.5 || gap.Met != 2 || gap.Verdict() != "2 of 3 runs" {
		t.Errorf("gap: median %v range %v..%v met %d (%q)", gap.Median, gap.Min, gap.Max, gap.Met, gap.Verdict())
	}
	if !strings.Contains(gap.Command, "LiveChangeGap/nodes=3$") {
		t.Errorf("gap's command %q", gap.Command)
	}
	ratio := byWhat["rolling reboots' time over the live change's"]
	if len(ratio.Values) != 3 || ratio.Values[0] != 8 || ratio.Values[1] != 9 || ratio.Values[2] != 9 || ratio.Median != 9 {
		t.Errorf("ratio values %v median %v, want each run's own 8, 9, 9", ratio.Values, ratio.Median)
	}
	decision := byWhat["one full drain decision, 5,000 nodes in 50 pools"]
	if math.Abs(decision.Median-12.3) > 1e-9 || decision.Verdict() != "yes" {
		t.Errorf("decision %v ms (%q), want 12.3 ms, met", decision.Median, decision.Verdict())
	}
	if f := byWhat["VXLAN port, longest gap (10 nodes)"]; f.Measured() || f.Verdict() != "" {
		t.Errorf("a figure not in the results is not measured: %+v", f)
	}
}

func TestPageSaysWhatWasNotMeasuredAndWhichJobsFailed(t *testing.T) {
	res, _ := Parse(strings.NewReader(sample))
	run := Run{Commit: "abc1234", Cores: 2, Jobs: []JobRun{{Name: "gap3", Command: "go test ...", Seconds: 754}, {Name: "zones", Failed: true}}}
	page := Page(run, Compute(Rows, Jobs, res))
	for _, want := range []string{
		"| MTU −100, longest gap of any long-lived connection (3 nodes) | < 50 ms | 40.5 ms (30 to 61.5, 3 runs) | 2 of 3 runs |",
		"| one full drain decision, 5,000 nodes in 50 pools | < 20 ms | 12.3 ms | yes |",
		"| a node's move, the other nodes' longest gap | < 100 ms | not measured |",
		"**Jobs that failed in this run** (their rows hold only the runs that finished, and say not measured where none did): zones",
		"| gap3 | `go test ...` | 12 min 34 s | passed |",
		HeldByMachine,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, "These machines are"); n != 1 {
		t.Errorf("the machine's line appears %d times, want once", n)
	}
}

func TestUnnamedKeepsWhatNoRowShows(t *testing.T) {
	res, _ := Parse(strings.NewReader(sample))
	other := Unnamed(Rows, res)
	if _, ok := other["BenchmarkFullDecision/nodes=5000/pools=50"]["allocs/op"]; !ok {
		t.Error("allocs/op is named by no row and must be kept")
	}
	if _, ok := other["BenchmarkLiveChangeGap/nodes=3"]["mtu-down-gap-ms"]; ok {
		t.Error("a named metric is not other")
	}
}

// Every row names a job that exists and a benchmark function the repository
// has, so a renamed or removed benchmark cannot leave a row that is never
// measured (a renamed metric can: its row then says not measured).
func TestEveryRowNamesAJobAndARealBenchmark(t *testing.T) {
	jobs := map[string]bool{}
	for _, j := range Jobs {
		jobs[j.Name] = true
	}
	benches := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(`)
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(data), -1) {
			benches[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range Rows {
		if !jobs[r.Job] {
			t.Errorf("row %q: no job %q", r.What, r.Job)
		}
		top, _, _ := strings.Cut(r.Of.Bench, "/")
		if !benches[top] {
			t.Errorf("row %q: no benchmark %s in the repository", r.What, top)
		}
		if seen[r.What] {
			t.Errorf("two rows say %q", r.What)
		}
		seen[r.What] = true
	}
	for _, a := range Areas {
		found := false
		for _, r := range Rows {
			found = found || r.Area == a
		}
		if !found {
			t.Errorf("area %q has no row", a)
		}
	}
}

// TestPageSaysWhatHoldsAMissedTarget: a row's Held is printed under its area's table when
// a run missed its target, and not when every run met it or none ran.
func TestPageSaysWhatHoldsAMissedTarget(t *testing.T) {
	row := func(what string, values []float64, met int) Figure {
		return Figure{Row: Row{Area: AreaScale, What: what, Target: Below(60), Held: "held by " + what}, Values: values, Met: met}
	}
	page := Page(Run{Cores: 2}, []Figure{row("missed", []float64{90}, 0), row("met", []float64{30}, 1), row("not run", nil, 0)})
	if !strings.Contains(page, "What holds the targets missed here:\n\n- missed: held by missed.\n") {
		t.Errorf("the page does not say what holds the missed target:\n%s", page)
	}
	for _, not := range []string{"held by met", "held by not run"} {
		if strings.Contains(page, not) {
			t.Errorf("the page says %q", not)
		}
	}
}

// TestWhatHoldsATargetCarriesTheRunsFigures: a {unit} in a row's Held becomes the median of
// what the row's benchmark reported under it (of an even count, the mean of the middle two), on
// the page; an empty {} is left as written.
func TestWhatHoldsATargetCarriesTheRunsFigures(t *testing.T) {
	rows := []Row{{Area: AreaScale, What: "change", Job: "scale", Of: m("BenchmarkX", "s"), Target: Below(60),
		Held: "the API server took {cpu-s} CPU-seconds, {writes/s} writes a second, etcd {etcd-cpu-s}, kwok {kwok-cpu-s} {}"}}
	res := Results{"BenchmarkX": {"s": {70, 90, 80}, "cpu-s": {75.5, 74.25, 80}, "writes/s": {216}, "kwok-cpu-s": {4, 1, 2, 3}}}
	figs := Compute(rows, Jobs, res)
	want := "the API server took 75.5 CPU-seconds, 216 writes a second, etcd (not measured), kwok 2.5 {}"
	if figs[0].Held != want {
		t.Errorf("Held = %q, want %q", figs[0].Held, want)
	}
	if page := Page(Run{Cores: 2}, figs); !strings.Contains(page, "- change: "+want+".\n") {
		t.Errorf("the page does not carry the run's figures in what holds the target:\n%s", page)
	}
}

// TestWhatHoldsATargetNamesWhatItsBenchmarkReports: every {unit} in a row's Held is a metric its
// benchmark reported in the committed run (docs/figures.json), so no page says "(not measured)"
// for a name that was mistyped. A benchmark that reported nothing in that run (its job failed)
// says nothing either way.
func TestWhatHoldsATargetNamesWhatItsBenchmarkReports(t *testing.T) {
	data, err := os.ReadFile("../../docs/figures.json")
	if err != nil {
		t.Fatal(err)
	}
	var run Document
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	reported, ran := map[Metric]bool{}, map[string]bool{}
	for _, f := range run.Figures {
		if len(f.Values) > 0 && f.Per == nil {
			reported[f.Of], ran[f.Of.Bench] = true, true
		}
	}
	for bench, units := range run.OtherMetrics {
		for unit := range units {
			reported[Metric{bench, unit}], ran[bench] = true, true
		}
	}
	for _, r := range Rows {
		if !ran[r.Of.Bench] {
			continue
		}
		for _, ref := range heldUnit.FindAllStringSubmatch(r.Held, -1) {
			if !reported[Metric{r.Of.Bench, ref[1]}] {
				t.Errorf("row %q: what holds it names {%s}, which %s did not report", r.What, ref[1], r.Of.Bench)
			}
		}
	}
}
