// Command figures is hack/bench.sh's helper: it lists the benchmark jobs and
// writes docs/figures.md and docs/figures.json from one run's outputs.
//
//	go run ./hack/figures jobs                      # NAME<TAB>COMMAND, a job a line
//	go run ./hack/figures render --results DIR --commit C --began T --ended T \
//	    --page docs/figures.md --json docs/figures.json
//
// DIR holds NAME.txt (a job's go test output) and jobs.tsv (NAME SECONDS EXIT).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"netshift.io/netshift/internal/figures"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: figures jobs | figures render --results DIR ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "jobs":
		for _, j := range figures.Jobs {
			fmt.Printf("%s\t%s\n", j.Name, j.Cmd)
		}
	case "render":
		err = render(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (jobs or render)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(1)
	}
}

func render(args []string) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	dir := fs.String("results", "", "the run's directory: NAME.txt per job and jobs.tsv")
	run := figures.Run{Cores: runtime.NumCPU(), Go: runtime.Version()}
	fs.StringVar(&run.Commit, "commit", "", "the commit the run measured")
	fs.StringVar(&run.Began, "began", "", "when the run began")
	fs.StringVar(&run.Ended, "ended", "", "when it ended")
	page := fs.String("page", "docs/figures.md", "the page to write")
	jsonPath := fs.String("json", "docs/figures.json", "the JSON to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("--results is required")
	}
	jobs, err := readJobs(filepath.Join(*dir, "jobs.tsv"))
	if err != nil {
		return err
	}
	run.Jobs = jobs
	res := figures.Results{}
	for _, j := range jobs {
		f, err := os.Open(filepath.Join(*dir, j.Name+".txt"))
		if err != nil {
			return err
		}
		r, err := figures.Parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("job %s: %w", j.Name, err)
		}
		for bench, units := range r {
			for unit, vs := range units {
				for _, v := range vs {
					res.Add(bench, unit, v)
				}
			}
		}
	}
	run.CPU, run.Memory, run.Kernel = machine()
	figs := figures.Compute(figures.Rows, figures.Jobs, res)
	if err := os.WriteFile(*page, []byte(figures.Page(run, figs)), 0o644); err != nil {
		return err
	}
	data, err := json.MarshalIndent(figures.Document{Run: run, Figures: figs, OtherMetrics: figures.Unnamed(figures.Rows, res)}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*jsonPath, append(data, '\n'), 0o644)
}

// readJobs reads bench.sh's record of the jobs it ran: NAME SECONDS EXIT.
func readJobs(path string) ([]figures.JobRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmds := map[string]string{}
	for _, j := range figures.Jobs {
		cmds[j.Name] = j.Cmd
	}
	var out []figures.JobRun
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		secs, _ := strconv.Atoi(fs[1])
		out = append(out, figures.JobRun{Name: fs[0], Command: cmds[fs[0]], Seconds: secs, Failed: fs[2] != "0"})
	}
	return out, sc.Err()
}

// machine reads the processor's model, the memory and the kernel.
func machine() (cpu, mem, kernel string) {
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %f kB", &kb); err == nil {
			mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(data))
	}
	return cpu, mem, kernel
}
