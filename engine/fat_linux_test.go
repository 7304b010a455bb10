package engine

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// A file over FAT's 4 GiB sent to a download folder on a FAT32 stick is
// refused with the offer, with why on both sides, and the rest arrives;
// nothing of it is written there. It failed after the offer instead (on a
// fusefat stick: "FAILED big.bin: Not saved: operation not permitted."),
// once its bytes had crossed where the file system then failed them.
// Needs root and a FAT32 mount (the kernel's vfat, else fusefat): it
// skips without them.
func TestFileOverFATLimitIsRefusedWithTheOffer(t *testing.T) {
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	sent, unsubSent := send.Subscribe(1024)
	defer unsubSent()
	src := t.TempDir()
	big := filepath.Join(src, "big.bin")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 5<<30); err != nil { // a sparse file: holes send fast
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(src, "notes.txt"), 1000)
	r := sendWait(t, send, target(recv), []string{big, filepath.Join(src, "notes.txt")}, SendOptions{})
	if r.State != StateDone || r.Verified != 1 || r.Refused != 1 {
		t.Fatalf("result %+v", r)
	}
	const why = "The download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)."
	for _, side := range []struct {
		name string
		evs  <-chan Event
		dir  Direction
	}{{"receiver", events, Receiving}, {"sender", sent, Sending}} {
		var got string
		for ev := range side.evs {
			if ev.Kind == EventFile && ev.Direction == side.dir && ev.File.Path == "big.bin" {
				got = ev.File.Err
			}
			if ev.Kind == EventResult && ev.Direction == side.dir {
				break
			}
		}
		if got != why {
			t.Errorf("the %s says of big.bin %q, want %q", side.name, got, why)
		}
	}
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if strings.Join(got, " ") != "notes.txt" {
		t.Errorf("the stick holds %q, want notes.txt alone", got)
	}
}

// A name FAT keeps out (a final dot) sent to a download folder on a
// FAT32 stick is saved as Windows would save it, and reported so: the
// kernel's vfat dropped the dot silently while the report said the name
// as sent, and fusefat kept "notes." as it is, which Windows cannot open.
func TestNameOnAFATStickIsSavedAsWindowsWould(t *testing.T) {
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "notes."), 100)
	r := sendWait(t, send, target(recv), []string{filepath.Join(src, "notes.")}, SendOptions{})
	if r.State != StateDone || r.Verified != 1 {
		t.Fatalf("result %+v", r)
	}
	var saved string
	for ev := range events {
		if ev.Kind == EventFile && ev.Direction == Receiving {
			saved = ev.File.SavedAs
		}
		if ev.Kind == EventResult && ev.Direction == Receiving {
			break
		}
	}
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if saved != "notes" || strings.Join(got, " ") != "notes" {
		t.Errorf("saved as %q; the stick holds %q; want notes", saved, got)
	}
}

// A browser's file over FAT's 4 GiB for a download folder on a FAT32 stick
// is refused as its upload is created, with why: it was refused for want
// of space there, or, on a stick with room, failed once written.
func TestBrowserFileOverFATLimitIsRefused(t *testing.T) {
	stick := testutil.FATStick(t)
	e := testEngine(t, Options{DownloadDir: stick})
	endpoint, _ := browserLink(t, e, browserIdle)
	status, _, body := testutil.TusCreate(t, endpoint, "film.mkv", 5<<30)
	const why = "The download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)."
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), why) {
		t.Errorf("created: %d %q, want refused: %q", status, body, why)
	}
	if status, _, body := testutil.TusCreate(t, endpoint, "notes.txt", 1000); status != http.StatusCreated {
		t.Errorf("a small file: %d %q", status, body)
	}
}
