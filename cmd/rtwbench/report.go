package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// results is everything one run measured.
type results struct {
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	Elapsed string    `json:"elapsed"`
	Redis   string    `json:"redis"`
	Machine machine   `json:"machine"`
	Rows    []row     `json:"rows"`
	Notes   []string  `json:"notes,omitempty"`
}

// row is one figure, with the limit it is read against when it has one.
type row struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Limit names the row (or the target) the value is compared with;
	// Ratio is Value / that row's value.
	Limit  string  `json:"limit,omitempty"`
	Ratio  float64 `json:"ratio,omitempty"`
	Target string  `json:"target,omitempty"` // the acceptance target, when there is one
	Met    *bool   `json:"met,omitempty"`
}

func (r *results) add(w row) { r.Rows = append(r.Rows, w) }

func (r *results) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// value returns the value of the row named name (0 when absent).
func (r *results) value(name string) float64 {
	for _, w := range r.Rows {
		if w.Name == name {
			return w.Value
		}
	}
	return 0
}

// against adds a row read against the row named limit, with an optional
// minimum ratio as its target.
func (r *results) against(name string, v float64, unit, limit string, minRatio float64) {
	w := row{Name: name, Value: v, Unit: unit, Limit: limit}
	if l := r.value(limit); l > 0 {
		w.Ratio = v / l
		if minRatio > 0 {
			met := w.Ratio >= minRatio
			w.Target, w.Met = fmt.Sprintf("ratio ≥ %.2g", minRatio), &met
		}
	}
	r.add(w)
}

// ratio is v / limit, 0 when there is no limit.
func ratio(v, limit float64) float64 {
	if limit <= 0 {
		return 0
	}
	return v / limit
}

func (r *results) writeJSON(out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

func (r *results) writeTable(out io.Writer) error {
	m := r.Machine
	fmt.Fprintf(out, "%s\n", r.Command)
	fmt.Fprintf(out, "started %s, took %s; %d CPUs (%s), %s, Redis %s (%s)\n",
		r.Started.Format(time.RFC3339), r.Elapsed, m.CPUs, m.CPUModel, m.GoVersion, m.Redis, r.Redis)
	fmt.Fprintf(out, "load average at start %s, at end %s; CPU steal during the run %.1f%%\n\n", m.LoadStart, m.LoadEnd, m.StealPct)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tread against\tratio\ttarget\t")
	fmt.Fprintln(tw, "------\t-----\t------------\t-----\t------\t")
	for _, w := range r.Rows {
		ratio := ""
		if w.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", w.Ratio)
		}
		target := w.Target
		if w.Met != nil {
			if *w.Met {
				target += " ✓"
			} else {
				target += " ✗ MISSED"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", w.Name, format(w.Value, w.Unit), w.Limit, ratio, target)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(out)
		for _, n := range r.Notes {
			fmt.Fprintf(out, "note: %s\n", n)
		}
	}
	return nil
}

// format prints v in unit, with thousands as k for rates.
func format(v float64, unit string) string {
	switch {
	case unit == "ms":
		return fmt.Sprintf("%.1f ms", v)
	case unit == "µs":
		return fmt.Sprintf("%.0f µs", v)
	case unit == "s":
		return fmt.Sprintf("%.2f s", v)
	case strings.HasSuffix(unit, "/s") && v >= 10_000:
		return fmt.Sprintf("%.1fk %s", v/1000, unit)
	case v == float64(int64(v)):
		return fmt.Sprintf("%d %s", int64(v), unit)
	default:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
}
