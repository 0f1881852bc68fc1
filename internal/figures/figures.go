package figures

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// A Target is the bound a figure is judged against.
type Target struct {
	Op    string // "<" or "≤"
	Value float64
}

// Below is a target of strictly less than v.
func Below(v float64) *Target { return &Target{Op: "<", Value: v} }

// AtMost is a target of v or less.
func AtMost(v float64) *Target { return &Target{Op: "≤", Value: v} }

// Meets says whether v holds the target.
func (t Target) Meets(v float64) bool {
	if t.Op == "<" {
		return v < t.Value
	}
	return v <= t.Value
}

func (t Target) String() string { return t.Op + " " + number(t.Value) }

// A Figure is a row with what the run measured for it.
type Figure struct {
	Row
	Command string    `json:"command"`
	Values  []float64 `json:"values"` // one per run, in the row's shown unit
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	// Met counts the runs that hold the target (with no target: 0).
	Met int `json:"met"`
}

// Measured says whether the run produced the figure at all.
func (f Figure) Measured() bool { return len(f.Values) > 0 }

// Verdict is the page's word on the target: "yes", "no", "2 of 3 runs", or
// "" when the row has no target or was not measured.
func (f Figure) Verdict() string {
	switch {
	case f.Target == nil || !f.Measured():
		return ""
	case f.Met == len(f.Values):
		return "yes"
	case f.Met == 0:
		return "no"
	default:
		return fmt.Sprintf("%d of %d runs", f.Met, len(f.Values))
	}
}

// Compute gives every row its values from the results.
func Compute(rows []Row, jobs []Job, res Results) []Figure {
	cmds := map[string]string{}
	for _, j := range jobs {
		cmds[j.Name] = j.Cmd
	}
	out := make([]Figure, 0, len(rows))
	for _, r := range rows {
		f := Figure{Row: r, Command: cmds[r.Job], Values: values(r, res)}
		f.Held = fillHeld(r.Held, res[r.Of.Bench])
		if f.Measured() {
			sorted := slices.Sorted(slices.Values(f.Values))
			f.Min, f.Max, f.Median = sorted[0], sorted[len(sorted)-1], median(sorted)
			for _, v := range f.Values {
				if r.Target != nil && r.Target.Meets(v) {
					f.Met++
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// values are a row's values, scaled; a ratio row divides run by run where
// both sides ran as often, else the medians.
func values(r Row, res Results) []float64 {
	of := res[r.Of.Bench][r.Of.Unit]
	scale := r.Scale
	if scale == 0 {
		scale = 1
	}
	if r.Per == nil {
		out := make([]float64, len(of))
		for i, v := range of {
			out[i] = v * scale
		}
		return out
	}
	per := res[r.Per.Bench][r.Per.Unit]
	if len(of) == 0 || len(per) == 0 {
		return nil
	}
	if len(of) != len(per) {
		return ratios([]float64{median(slices.Sorted(slices.Values(of)))}, []float64{median(slices.Sorted(slices.Values(per)))})
	}
	return ratios(of, per)
}

func ratios(of, per []float64) []float64 {
	var out []float64
	for i := range of {
		if per[i] != 0 {
			out = append(out, of[i]/per[i])
		}
	}
	return out
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// number prints a figure with the precision a reader needs: three
// significant digits, at most two decimals, thousands kept whole.
func number(v float64) string {
	a := math.Abs(v)
	switch {
	case v == math.Trunc(v) && a < 1e15:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	}
}

// Unnamed lists the metrics the results hold that no row names, by
// benchmark: they go into the JSON so nothing measured is hidden.
func Unnamed(rows []Row, res Results) map[string]map[string][]float64 {
	named := map[Metric]bool{}
	for _, r := range rows {
		named[r.Of] = true
		if r.Per != nil {
			named[*r.Per] = true
		}
	}
	out := map[string]map[string][]float64{}
	for bench, units := range res {
		for unit, vs := range units {
			if !named[Metric{bench, unit}] {
				if out[bench] == nil {
					out[bench] = map[string][]float64{}
				}
				out[bench][unit] = vs
			}
		}
	}
	return out
}

// heldUnit is a {unit} in a row's Held.
var heldUnit = regexp.MustCompile(`\{([^{}\s]+)\}`)

// fillHeld puts into held the median of each {unit} the benchmark reported,
// "(not measured)" where it reported none.
func fillHeld(held string, reported map[string][]float64) string {
	return heldUnit.ReplaceAllStringFunc(held, func(ref string) string {
		vs := reported[strings.Trim(ref, "{}")]
		if len(vs) == 0 {
			return "(not measured)"
		}
		return number(median(slices.Sorted(slices.Values(vs))))
	})
}
