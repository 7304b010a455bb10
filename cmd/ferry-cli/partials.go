package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{name: "partials", summary: "list (or discard) unfinished incoming transfers kept for resume", run: runPartials})
}

func runPartials(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("partials", errOut)
	discard := fs.String("discard", "", "discard the unfinished transfer with this `KEY` (its .partial files and resume state)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	e, err := engine.New(engine.Options{ConfigDir: dir})
	if err != nil {
		return err
	}
	defer e.Close()
	if *discard != "" {
		for _, p := range e.Partials() {
			if p.Key == *discard {
				return e.DiscardPartial(p.Key)
			}
		}
		return fmt.Errorf("no unfinished transfer with key %q (run ferry-cli partials to list them)", *discard)
	}
	ps := e.Partials()
	if *asJSON {
		return json.NewEncoder(out).Encode(ps)
	}
	var total int64
	for _, p := range ps {
		fmt.Fprintln(out, partialLine(p, time.Now()))
		total += p.Bytes
	}
	fmt.Fprintf(out, "%d unfinished transfer(s), %s held by partial files\n", len(ps), humanBytes(total))
	return nil
}

// partialLine is one unfinished transfer as partials lists it; the peer's
// name is its own words, escaped.
func partialLine(p engine.PartialTransfer, now time.Time) string {
	when := "last touched " + now.Sub(p.Updated).Round(time.Minute).String() + " ago"
	if p.Receiving {
		when = "receiving now"
	}
	return fmt.Sprintf("%s  from %s (%s)  %d file(s), %d saved, %s of the others kept in %s, %s", p.Key,
		safetext.Name(p.PeerName), short(p.PeerID), p.Files, p.Saved, humanBytes(p.Bytes), safetext.Name(p.Dest), when)
}
