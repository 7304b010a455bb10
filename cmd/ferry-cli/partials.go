package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
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
	dlDir := fs.String("dir", "", "where to look for the partial files of a transfer whose resume state is damaged and no longer says where they are: the download `DIR` it went to (default: ~/Downloads)")
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
	if *dlDir != "" {
		if *dlDir, err = filepath.Abs(*dlDir); err != nil {
			return err
		}
	}
	e, err := engine.New(engine.Options{ConfigDir: dir, DownloadDir: *dlDir})
	if err != nil {
		return err
	}
	defer e.Close()
	if *discard != "" {
		for _, p := range e.Partials() {
			if p.Key == *discard {
				d, err := e.DiscardPartialFiles(p.Key)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, discardedLine(p, d))
				return nil
			}
		}
		return fmt.Errorf("no unfinished transfer with key %q (run ferry-cli partials to list them)", *discard)
	}
	ps := e.Partials()
	if *asJSON {
		list := make([]partialJSON, len(ps))
		for i, p := range ps {
			list[i] = partialJSON{Key: p.Key, PeerID: p.PeerID, PeerName: p.PeerName, Dest: p.Dest, Files: p.Files, Saved: p.Saved,
				Verified: p.Bytes, OnDisk: p.OnDisk, Updated: p.Updated, Partials: append([]string{}, p.Partials...), Receiving: p.Receiving,
				Damaged: p.Damaged, Unremoved: p.Unremoved}
		}
		return json.NewEncoder(out).Encode(list)
	}
	var total int64
	for _, p := range ps {
		fmt.Fprintln(out, partialLine(p, time.Now()))
		total += p.OnDisk
	}
	fmt.Fprintf(out, "%d unfinished transfer(s), their partial files take %s on disk\n", len(ps), humanBytes(total))
	return nil
}

// partialJSON is one unfinished transfer in partials --json, named as the
// other commands' JSON is (snake_case).
type partialJSON struct {
	Key       string    `json:"key"`
	PeerID    string    `json:"peer_id"`
	PeerName  string    `json:"peer_name"`
	Dest      string    `json:"dest"`
	Files     int       `json:"files"`
	Saved     int       `json:"saved"`
	Verified  int64     `json:"verified_bytes"` // held by the partial files, verified: not sent again
	OnDisk    int64     `json:"on_disk_bytes"`  // the partial files' space on disk (preallocated whole)
	Updated   time.Time `json:"updated"`
	Partials  []string  `json:"partials"` // relative to dest
	Receiving bool      `json:"receiving"`
	// Damaged says why its resume state cannot be read whole; what is
	// listed is what could still be read of it.
	Damaged string `json:"damaged,omitempty"`
	// Unremoved: its partial files are ones its device's transfers gave
	// up on and could not remove; it resumes nothing.
	Unremoved bool `json:"unremoved,omitempty"`
}

// partialLine is one unfinished transfer as partials lists it; the peer's
// name is its own words, escaped.
func partialLine(p engine.PartialTransfer, now time.Time) string {
	when := "last touched " + seenAgo(p.Updated, now)
	if p.Receiving {
		when = "receiving now"
	}
	if p.Damaged != "" {
		return damagedLine(p, when)
	}
	if p.Unremoved {
		return fmt.Sprintf("%s  %s  %d partial file(s) left by its transfers that could not be removed (another program had them open, or the folder is read-only), %s on disk in %s; ferry-cli partials --discard %s tries again, %s",
			p.Key, fromWhom(p), len(p.Partials), humanBytes(p.OnDisk), safetext.Name(p.Dest), p.Key, when)
	}
	return fmt.Sprintf("%s  %s  %d file(s), %d saved, %s of the others kept (%s on disk) in %s, %s", p.Key,
		fromWhom(p), p.Files, p.Saved, humanBytes(p.Bytes), humanBytes(p.OnDisk), safetext.Name(p.Dest), when)
}

// discardedLine says what discarding the unfinished transfer p removed.
func discardedLine(p engine.PartialTransfer, d engine.Discarded) string {
	from := fromWhom(p)
	switch d.Files {
	case 0:
		return fmt.Sprintf("discarded the unfinished transfer %s: none of its partial files was left to remove", from)
	case 1:
		return fmt.Sprintf("discarded the unfinished transfer %s: 1 partial file removed, %s freed", from, humanBytes(d.Freed))
	}
	return fmt.Sprintf("discarded the unfinished transfer %s: %d partial files removed, %s freed", from, d.Files, humanBytes(d.Freed))
}

// fromWhom names the device an unfinished transfer came from, "from Bob
// (QTSP-CHWU)", its name escaped; a damaged state may no longer say.
func fromWhom(p engine.PartialTransfer) string {
	if p.PeerID == "" {
		return "from an unknown device"
	}
	return fmt.Sprintf("from %s (%s)", safetext.Name(p.PeerName), short(p.PeerID))
}

// damagedLine is an unfinished transfer whose resume state is damaged:
// what could still be read of it, what a send of the same files does, and
// how to remove it.
func damagedLine(p engine.PartialTransfer, when string) string {
	from := fromWhom(p)
	kept := "its partial files were not found (gone, or in another download folder than the one looked in: give it with --dir)"
	if n := len(p.Partials); n > 0 {
		kept = fmt.Sprintf("%d partial file(s) still named, %s on disk in %s; a send of the same files resumes what it still lists, else starts over",
			n, humanBytes(p.OnDisk), safetext.Name(p.Dest))
	}
	return fmt.Sprintf("%s  %s  resume state damaged (%s): %s; ferry-cli partials --discard %s removes it, %s", p.Key, from,
		safetext.Line(p.Damaged), kept, p.Key, when)
}
