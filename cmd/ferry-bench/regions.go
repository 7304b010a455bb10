package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	xtrace "golang.org/x/exp/trace" // reads runtime traces (go test -trace)
)

func init() {
	register(command{name: "regions", summary: "per-region-type durations (count, median, p90, sum) of a runtime trace, e.g. a LocalSend receive's per-file steps", run: runRegions})
}

// runRegions reads a runtime trace (go test -trace FILE, runtime/trace)
// and prints, for each user region type and each task type ("task
// TYPE"), how many there were and their median, 90th percentile and
// total duration: for a LocalSend receive,
// what each file waited for in each step (docs/localsend.md, "Figures").
func runRegions(_ context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ferry-bench regions", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: ferry-bench regions TRACE") }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("one trace file")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	stats, err := regionDurations(f)
	if err != nil {
		return err
	}
	return printRegions(out, stats)
}

// regionDurations returns the durations of the trace's user regions and
// tasks ("task " and its type), by type. A region is matched to its end on its goroutine (regions nest
// there); one still open at the trace's end is left out, as is a task
// begun before the trace.
func regionDurations(r io.Reader) (map[string][]time.Duration, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	type open struct {
		typ   string
		start xtrace.Time
	}
	stacks := map[xtrace.GoID][]open{}
	tasks := map[xtrace.TaskID]open{}
	out := map[string][]time.Duration{}
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
		switch ev.Kind() {
		case xtrace.EventTaskBegin:
			tasks[ev.Task().ID] = open{"task " + ev.Task().Type, ev.Time()}
		case xtrace.EventTaskEnd:
			if t, ok := tasks[ev.Task().ID]; ok {
				out[t.typ] = append(out[t.typ], ev.Time().Sub(t.start))
				delete(tasks, ev.Task().ID)
			}
		case xtrace.EventRegionBegin:
			g := ev.Goroutine()
			stacks[g] = append(stacks[g], open{ev.Region().Type, ev.Time()})
		case xtrace.EventRegionEnd:
			g, typ := ev.Goroutine(), ev.Region().Type
			st := stacks[g]
			for i := len(st) - 1; i >= 0; i-- {
				if st[i].typ == typ {
					out[typ] = append(out[typ], ev.Time().Sub(st[i].start))
					stacks[g] = st[:i]
					break
				}
			}
		}
	}
}

func printRegions(w io.Writer, stats map[string][]time.Duration) error {
	types := make([]string, 0, len(stats))
	for t := range stats {
		types = append(types, t)
	}
	slices.Sort(types)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "region\tcount\tmedian ms\tp90 ms\tsum s\t")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }
	for _, t := range types {
		d := stats[t]
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.3f\t\n", t, len(d), ms(d[len(d)/2]), ms(d[len(d)*9/10]), sum.Seconds())
	}
	return tw.Flush()
}
