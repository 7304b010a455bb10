package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// runLinkCommand runs a link command with --json and returns its events as
// they come, and a function that stops it and returns its error.
func runLinkCommand(t *testing.T, args ...string) (<-chan linkEvent, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		c := commands[args[0]]
		done <- c.run(ctx, args[1:], pw, io.Discard)
		pw.Close()
	}()
	events := make(chan linkEvent, 1024)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var ev linkEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("not a JSON event: %q", sc.Text())
				continue
			}
			events <- ev
		}
	}()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			err = <-done
			for range events {
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return events, stop
}

// next returns the next event of the kind, skipping others.
func next(t *testing.T, events <-chan linkEvent, kind string) linkEvent {
	t.Helper()
	for ev := range events {
		if ev.Event == kind {
			return ev
		}
	}
	t.Fatalf("no %s event", kind)
	return linkEvent{}
}

func TestShareCommand(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("ferry "), 50_000)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	events, stop := runLinkCommand(t, "share", "--config", t.TempDir(), "--json", "--listen", "127.0.0.1:0", "--once", filepath.Join(dir, "a.txt"))
	link := next(t, events, "link")
	res, err := http.Get(link.URL + "f/0/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Fatalf("download: %d, %d bytes", res.StatusCode, len(got))
	}
	done := next(t, events, "done")
	if done.Name != "a.txt" || done.Error != "" || *done.Bytes != int64(len(data)) {
		t.Fatalf("done event %+v", done)
	}
	// --once: the link ends by itself after the whole download.
	if ended := next(t, events, "ended"); ended.Error == "" {
		t.Fatalf("ended event %+v", ended)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestReceiveLinkCommand(t *testing.T) {
	dir := t.TempDir()
	events, stop := runLinkCommand(t, "receive", "--config", t.TempDir(), "--link", "--json", "--listen", "127.0.0.1:0", "--dir", dir)
	link := next(t, events, "link")
	data := []byte("from a browser")
	testutil.TusUpload(t, link.URL+"tus/", "note.txt", len(data), data)
	// The file went through the engine's inbox: a transfer with its result,
	// as history keeps it, from "a browser at" its address, unprompted
	// (the result and the link's "done" come in either order).
	got := map[string]linkEvent{}
	for ev := range events {
		if ev.Event == "done" || ev.Event == "result" {
			got[ev.Event] = ev
		}
		if len(got) == 2 {
			break
		}
	}
	if done := got["done"]; !done.Upload || done.Error != "" || done.Name != "note.txt" {
		t.Fatalf("done event %+v", done)
	}
	if r := got["result"]; r.From != "a browser at 127.0.0.1" || r.State != "done" {
		t.Fatalf("result event %+v", r)
	}
	// The inbox refuses a name it cannot store safely, that file alone.
	if status, _, body := testutil.TusCreate(t, link.URL+"tus/", "x\u202etxt.exe", 3); status < 400 || len(body) == 0 {
		t.Fatalf("a name with a bidi control: %d %q", status, body)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "note.txt")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved: %v %q", err, got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestShareSaysWhileListing: share lists a folder's files before the link
// opens; when that takes a while (here: at once) it says so first, on the
// human output only.
func TestShareSaysWhileListing(t *testing.T) {
	old := listingNotice
	listingNotice = 0
	t.Cleanup(func() { listingNotice = old })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, json := range []bool{false, true} {
		args := []string{"--config", t.TempDir(), "--listen", "127.0.0.1:0", "--expire", "1ns", dir}
		if json {
			args = append([]string{"--json"}, args...)
		}
		var out bytes.Buffer
		err := commands["share"].run(t.Context(), args, &out, io.Discard)
		said := strings.Contains(out.String(), "Listing the files to share")
		if said == json {
			t.Errorf("json %v: said %v:\n%s (%v)", json, said, out.String(), err)
		}
		if !json && strings.Index(out.String(), "Listing") > strings.Index(out.String(), "Sharing") {
			t.Errorf("the notice came after the link:\n%s", out.String())
		}
	}
	// Ctrl-C while it lists: stopped, no link, no error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	if err := commands["share"].run(ctx, []string{"--config", t.TempDir(), "--listen", "127.0.0.1:0", dir}, &out, io.Discard); err != nil || strings.Contains(out.String(), "Sharing") {
		t.Errorf("interrupted while listing: %v\n%s", err, out.String())
	}
}
