package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	want := `k1  from "Bob\x1b[2J\r" (QTSP-CHWU)  3 file(s), 2 saved, 1.5 MB of the others kept (4.0 MB on disk) in /home/a/Downloads, last touched 5 min ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Under a minute is just now (it said "0s ago" up to 30 s, then "1m0s").
	for _, age := range []time.Duration{0, 20 * time.Second, 59 * time.Second} {
		p := engine.PartialTransfer{Key: "k1", PeerName: "Bob", PeerID: "QTSPCHWUSEMLS3ZR", Dest: "/d", Updated: now.Add(-age)}
		if got := partialLine(p, now); !strings.HasSuffix(got, ", last touched just now") {
			t.Errorf("touched %v ago: %q", age, got)
		}
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
// be read of it and how to remove it (it was not listed at all), in one
// level of brackets ("(its snapshot is damaged (cut short))" before).
func TestPartialLineDamaged(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	got := partialLine(engine.PartialTransfer{Key: "k1", Damaged: "its snapshot is cut short", Dest: "/home/a/Downloads",
		Partials: []string{"big.bin.partial"}, OnDisk: 4_000_000, Updated: now.Add(-5 * time.Minute)}, now)
	want := `k1  from an unknown device  resume state damaged (its snapshot is cut short): 1 partial file(s) still named, 4.0 MB on disk in /home/a/Downloads; a send of the same files resumes what it still lists, else starts over; ferry-cli partials --discard k1 removes it, last touched 5 min ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got = partialLine(engine.PartialTransfer{Key: "k2", Damaged: "its snapshot is missing", PeerName: "Bob", PeerID: "QTSPCHWUSEMLS3ZR", Updated: now}, now)
	want = `k2  from Bob (QTSP-CHWU)  resume state damaged (its snapshot is missing): its partial files were not found (gone, or in another download folder than the one looked in: give it with --dir); ferry-cli partials --discard k2 removes it, last touched just now`
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
	want := `k1  from Bob (QTSP-CHWU)  2 partial file(s) left by its transfers that could not be removed (another program had them open, or the folder is read-only), 4.0 MB on disk in /home/a/Downloads; ferry-cli partials --discard k1 tries again, last touched 5 min ago`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A successful discard says what it removed and freed (it printed
// nothing); one whose partial files were gone already says so.
func TestPartialsDiscardSaysWhatItRemoved(t *testing.T) {
	cfg, dl := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg, "resume"), 0o700); err != nil {
		t.Fatal(err)
	}
	state := func(key string, partials ...string) {
		t.Helper()
		var files []string
		for i, p := range partials {
			files = append(files, fmt.Sprintf(`{"index":%d,"path":%q,"size":1048576,"partial":%q}`, i, strings.TrimSuffix(p, ".partial"), p))
		}
		s := fmt.Sprintf(`{"version":3,"peer":"QTSPCHWUSEMLS3ZR","peer_name":"Bob","manifest":"m","chunk_size":4194304,"dest":%q,"updated":"2026-12-04T12:00:00Z","accepted":%d,"files":[%s]}`,
			dl, len(partials), strings.Join(files, ","))
		if err := os.WriteFile(filepath.Join(cfg, "resume", key+".json"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state("k1", "a.bin.partial", "b.bin.partial")
	for _, name := range []string{"a.bin.partial", "b.bin.partial"} {
		if err := os.WriteFile(filepath.Join(dl, name), make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state("k2", "c.bin.partial") // gone already
	for _, c := range []struct{ key, want string }{
		{"k1", "discarded the unfinished transfer from Bob (QTSP-CHWU): 2 partial files removed, 2.1 MB freed\n"},
		{"k2", "discarded the unfinished transfer from Bob (QTSP-CHWU): none of its partial files was left to remove\n"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"partials", "--config", cfg, "--discard", c.key}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		if out.String() != c.want {
			t.Errorf("partials --discard %s:\n got %q\nwant %q", c.key, out.String(), c.want)
		}
	}
	if ents, _ := os.ReadDir(dl); len(ents) != 0 {
		t.Errorf("left: %v", ents)
	}
}
