package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

func TestPartialsCommand(t *testing.T) {
	cfg := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"partials", "--config", cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "0 unfinished transfer(s)") {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"partials", "--config", cfg, "--discard", "nope"}, &out, &errOut); code != 1 {
		t.Fatalf("discarding an unknown key: exit %d", code)
	}
	if !strings.Contains(errOut.String(), "no unfinished transfer") {
		t.Errorf("error %q", errOut.String())
	}
}

// A kept transfer says how many of its files are saved, and the sender's
// name reaches the terminal escaped (it was printed as the peer chose it).
func TestPartialLine(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	got := partialLine(engine.PartialTransfer{Key: "k1", PeerName: "Bob\x1b[2J\r", PeerID: "QTSPCHWUSEMLS3ZR", Dest: "/home/a/Downloads",
		Files: 3, Saved: 2, Bytes: 1_500_000, OnDisk: 4_000_000, Updated: now.Add(-5 * time.Minute)}, now)
	want := `k1  from "Bob\x1b[2J\r" (QTSPCHWU)  3 file(s), 2 saved, 1.5 MB of the others kept (4.0 MB on disk) in /home/a/Downloads, last touched 5m0s ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A send that skipped more than its examples says how many more, and a
// skipped name reaches the terminal escaped (both as the app shows them).
func TestSkippedExamples(t *testing.T) {
	s := &engine.SkippedInfo{Symlinks: 7, Examples: []string{"l1", "l2", "l3", "l4", "l\x1b[2J5"}}
	if got, want := skippedExamples(s), `l1, l2, l3, l4, "l\x1b[2J5" and 2 more`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s = &engine.SkippedInfo{Symlinks: 2, Examples: []string{"a", "b"}}
	if got := skippedExamples(s); got != "a, b" {
		t.Errorf("got %q", got)
	}
}

// A transfer whose resume state is damaged says so, with what could still
// be read of it and how to remove it (it was not listed at all).
func TestPartialLineDamaged(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	got := partialLine(engine.PartialTransfer{Key: "k1", Damaged: "its snapshot is damaged (cut short)", Dest: "/home/a/Downloads",
		Partials: []string{"big.bin.partial"}, OnDisk: 4_000_000, Updated: now.Add(-5 * time.Minute)}, now)
	want := `k1  from an unknown device  resume state damaged (its snapshot is damaged (cut short)): 1 partial file(s) still named, 4.0 MB on disk in /home/a/Downloads; a send of the same files resumes what it still lists, else starts over; ferry-cli partials --discard k1 removes it, last touched 5m0s ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got = partialLine(engine.PartialTransfer{Key: "k2", Damaged: "its snapshot is missing", PeerName: "Bob", PeerID: "QTSPCHWUSEMLS3ZR", Updated: now}, now)
	want = `k2  from Bob (QTSPCHWU)  resume state damaged (its snapshot is missing): its partial files were not found (gone, or in another download folder than the one looked in: give it with --dir); ferry-cli partials --discard k2 removes it, last touched 0s ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Partial files that transfers gave up on and could not remove are listed
// as such, with how to try again (they were listed nowhere).
func TestPartialLineUnremoved(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	got := partialLine(engine.PartialTransfer{Key: "k1", Unremoved: true, PeerName: "Bob", PeerID: "QTSPCHWUSEMLS3ZR", Dest: "/home/a/Downloads",
		Files: 2, Partials: []string{"a.bin.partial", "b.bin.partial"}, OnDisk: 4_000_000, Updated: now.Add(-5 * time.Minute)}, now)
	want := `k1  from Bob (QTSPCHWU)  2 partial file(s) left by its transfers that could not be removed (another program had them open, or the folder is read-only), 4.0 MB on disk in /home/a/Downloads; ferry-cli partials --discard k1 tries again, last touched 5m0s ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
