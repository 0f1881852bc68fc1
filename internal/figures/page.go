package figures

import (
	"fmt"
	"strings"
)

// A Run is what the page says of the run as a whole.
type Run struct {
	Commit string   `json:"commit"`
	Began  string   `json:"began"`
	Ended  string   `json:"ended"`
	Cores  int      `json:"cores"`
	CPU    string   `json:"cpu"`
	Memory string   `json:"memory"`
	Kernel string   `json:"kernel"`
	Go     string   `json:"go"`
	Jobs   []JobRun `json:"jobs"`
}

// A Document is the figures' JSON: the run, its figures, and every metric
// the benchmarks reported that no row names.
type Document struct {
	Run          Run                             `json:"run"`
	Figures      []Figure                        `json:"figures"`
	OtherMetrics map[string]map[string][]float64 `json:"otherMetrics"`
}

// A JobRun is how one job of the run went.
type JobRun struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Seconds int    `json:"seconds"`
	Failed  bool   `json:"failed"`
}

// HeldByMachine is the page's one line on what this kind of machine holds.
const HeldByMachine = "These machines are 2-core VMs, shared, with no kernel Open vSwitch module and no hardware " +
	"virtualization: every lab node's data path is a userspace ovs-vswitchd on the same two cores as its kubelet, " +
	"containerd and pods, so the gaps, the 10-node figures and the pod bursts are held by the machine more than by netshift."

// Page is the figures page of one run.
func Page(run Run, figs []Figure) string {
	var b strings.Builder
	b.WriteString("# Figures\n\n")
	b.WriteString("Written by `hack/bench.sh` from one run of every benchmark at full size; never edited by hand. ")
	b.WriteString("The same figures, every other metric the benchmarks report, and each run's values: [figures.json](figures.json).\n\n")
	fmt.Fprintf(&b, "- Commit: `%s`\n", run.Commit)
	fmt.Fprintf(&b, "- Run: %s to %s\n", run.Began, run.Ended)
	fmt.Fprintf(&b, "- Machine: %d cores (%s), %s of memory, Linux %s, %s\n", run.Cores, run.CPU, run.Memory, run.Kernel, run.Go)
	fmt.Fprintf(&b, "- %s\n", HeldByMachine)
	if failed := failedJobs(run.Jobs); len(failed) > 0 {
		fmt.Fprintf(&b, "- **Jobs that failed in this run** (their rows hold only the runs that finished, and say not measured where none did): %s\n", strings.Join(failed, ", "))
	}
	b.WriteString("\nA value is the median of the runs, with their range and count where there were several. ")
	b.WriteString("Met says whether the target held in every run. What must never happen (a long-lived connection broken by a change, a datagram lost by per-port plugging) fails the benchmark's run instead of reporting a figure.\n")
	for _, area := range Areas {
		fmt.Fprintf(&b, "\n## %s\n\n", area)
		b.WriteString("| figure | target | measured | met | command |\n| --- | --- | --- | --- | --- |\n")
		for _, f := range figs {
			if f.Area != area {
				continue
			}
			target := ""
			if f.Target != nil {
				target = withUnit(f.Target.String(), f.Shown)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` |\n", f.What, target, measured(f), f.Verdict(), f.Command)
		}
		writeHeld(&b, area, figs)
	}
	b.WriteString("\n## Jobs\n\n| job | command | took | result |\n| --- | --- | --- | --- |\n")
	for _, j := range run.Jobs {
		result := "passed"
		if j.Failed {
			result = "**failed**"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", j.Name, j.Command, duration(j.Seconds), result)
	}
	return b.String()
}

// writeHeld says, under an area's table, what holds each of its targets a run missed.
func writeHeld(b *strings.Builder, area string, figs []Figure) {
	first := true
	for _, f := range figs {
		if v := f.Verdict(); f.Area != area || f.Held == "" || v == "" || v == "yes" {
			continue
		}
		if first {
			b.WriteString("\nWhat holds the targets missed here:\n\n")
			first = false
		}
		fmt.Fprintf(b, "- %s: %s.\n", f.What, f.Held)
	}
}

func measured(f Figure) string {
	if !f.Measured() {
		return "not measured"
	}
	s := withUnit(number(f.Median), f.Shown)
	if len(f.Values) > 1 {
		s += fmt.Sprintf(" (%s to %s, %d runs)", number(f.Min), number(f.Max), len(f.Values))
	}
	return s
}

func withUnit(v, unit string) string {
	switch unit {
	case "":
		return v
	case "×":
		return v + "×"
	}
	return v + " " + unit
}

func duration(s int) string {
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %02d s", s/60, s%60)
}

func failedJobs(jobs []JobRun) []string {
	var out []string
	for _, j := range jobs {
		if j.Failed {
			out = append(out, j.Name)
		}
	}
	return out
}
