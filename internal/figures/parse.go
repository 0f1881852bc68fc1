// Package figures turns the output of netshift's benchmarks into the
// figures page: which benchmark measures what, the target each figure is
// judged against, the median and range over the runs of one job, and the
// command that produced it. hack/bench.sh runs the commands and calls it;
// the page is never written by hand.
package figures

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Results are the values each benchmark reported, by benchmark name (without
// the -GOMAXPROCS suffix) and unit, one value per run in the order they came.
type Results map[string]map[string][]float64

// benchLine is a result line of `go test -bench`: its name, iterations, then
// pairs of value and unit.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)

// Parse reads `go test -bench` output (several packages' outputs may follow
// each other) and collects every reported metric. Lines that are not results
// (logs, PASS, ok) are skipped; a result line whose pairs do not parse is an
// error naming it, so a figure is never silently lost.
func Parse(r io.Reader) (Results, error) {
	res := Results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("line %d: %q: values and units do not pair up", n, sc.Text())
		}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q: value %q: %w", n, sc.Text(), fields[i], err)
			}
			res.Add(m[1], fields[i+1], v)
		}
	}
	return res, sc.Err()
}

// Add records one run's value of a metric.
func (r Results) Add(bench, unit string, v float64) {
	if r[bench] == nil {
		r[bench] = map[string][]float64{}
	}
	r[bench][unit] = append(r[bench][unit], v)
}
