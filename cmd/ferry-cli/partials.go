package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/ferrydrop/ferry/engine"
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
		fmt.Fprintf(out, "%s  from %s (%s)  %d file(s), %s kept in %s, last touched %s ago\n", p.Key, p.PeerName, short(p.PeerID),
			p.Files, humanBytes(p.Bytes), p.Dest, time.Since(p.Updated).Round(time.Minute))
		total += p.Bytes
	}
	fmt.Fprintf(out, "%d unfinished transfer(s), %s held by partial files\n", len(ps), humanBytes(total))
	return nil
}
