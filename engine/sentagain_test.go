package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

// TestFolderSentAgainKeepsItsSameFiles: a folder sent a second time by a
// trusted device, with a file added and one changed in its last chunk
// (same size), arrives with the added file and the changed one numbered
// beside the first version; the files unchanged, empty and of several
// chunks ones included, are the ones already there, not saved twice. Until
// 2026-12-07 every file came a second time as "name (1)". Each send
// verifies every file. A device not trusted sending the same files has
// them numbered, as before: it hears nothing of what the files here hold.
func TestFolderSentAgainKeepsItsSameFiles(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	pairEngines(t, send, recv)
	src := filepath.Join(t.TempDir(), "Photos")
	writeFile(t, filepath.Join(src, "a.jpg"), 200<<10)
	writeFile(t, filepath.Join(src, "big.bin"), 3<<20+5)
	edit := writeFile(t, filepath.Join(src, "sub", "edit.bin"), 3<<20)
	if err := os.WriteFile(filepath.Join(src, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for round, tp := range []string{"tcp", "quic"} {
		if round == 1 {
			writeFile(t, filepath.Join(src, "new.jpg"), 100<<10)
			edit[len(edit)-1] ^= 0xff
			if err := os.WriteFile(filepath.Join(src, "sub", "edit.bin"), edit, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		received := resultsOf(t, recv, Receiving, 1)
		// What the receiver says of each file, until its result.
		events, unsub := recv.Subscribe(4096)
		files := make(chan map[string]bool, 1)
		go func() {
			defer unsub()
			kept := map[string]bool{}
			for ev := range events {
				switch {
				case ev.Direction != Receiving:
				case ev.Kind == EventFile:
					kept[ev.File.Path] = ev.File.Kept
				case ev.Kind == EventResult:
					files <- kept
					return
				}
			}
		}()
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != res.Files {
			t.Fatalf("send %d: %s %q, %d of %d files verified", round+1, res.State, res.Err, res.Verified, res.Files)
		}
		if r := next(t, received); r.State != StateDone {
			t.Fatalf("received %d: %s %q", round+1, r.State, r.Err)
		}
		kept := <-files
		if round == 0 && fmt.Sprint(kept) != "map[Photos/a.jpg:false Photos/big.bin:false Photos/empty:false Photos/sub/edit.bin:false]" {
			t.Errorf("first send: files kept %v, want none of the four", kept)
		}
		if round == 1 {
			// The receiver says which it kept (the app's Details, ferry-cli).
			want := map[string]bool{"Photos/a.jpg": true, "Photos/big.bin": true, "Photos/empty": true, "Photos/new.jpg": false, "Photos/sub/edit.bin": false}
			if fmt.Sprint(kept) != fmt.Sprint(want) {
				t.Errorf("files kept as they were here: %v, want %v", kept, want)
			}
		}
	}
	dst := filepath.Join(recv.DownloadDir(), "Photos")
	got := filesUnder(t, dst)
	want := []string{"a.jpg", "big.bin", "empty", "new.jpg", "sub/edit (1).bin", "sub/edit.bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("the folder holds %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "edit (1).bin")); err != nil || !slices.Equal(b, edit) {
		t.Errorf("the changed file's second version: %d bytes (%v), not what was sent", len(b), err)
	}
	noPartials(t, recv.DownloadDir())

	stranger := testEngine(t, Options{Name: "Stranger"})
	received := resultsOf(t, recv, Receiving, 1)
	if res := sendWait(t, stranger, target(recv), []string{src}, SendOptions{}); res.State != StateDone {
		t.Fatalf("a device not trusted: %s %q", res.State, res.Err)
	}
	next(t, received)
	if _, err := os.Stat(filepath.Join(dst, "a (1).jpg")); err != nil {
		t.Errorf("a device not trusted: its file is not numbered beside the same one (%v)", err)
	}
}

// A folder sent again to a device that trusts the sender travels as its
// changes alone (wire.FeatureSame): the chunks of a file the receiver holds
// under its name are not sent, and a file of which one chunk changed sends
// that chunk, the rest copied from the file there. Until 2026-12-07 every
// byte travelled again, and was then compared. Each file is verified; a
// device not trusted, and a sender of a build before it, send every byte.
func TestSentAgainSendsOnlyWhatDiffers(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	pairEngines(t, send, recv)
	src := filepath.Join(t.TempDir(), "Photos")
	writeFile(t, filepath.Join(src, "a.jpg"), 200<<10)
	writeFile(t, filepath.Join(src, "big.bin"), 3<<20+5)
	edit := writeFile(t, filepath.Join(src, "sub", "edit.bin"), 3<<20)
	writeFile(t, filepath.Join(src, "note.txt"), 100) // under sameMinSize: it travels, and is kept
	chunk := int64(minBatchChunk)                     // a batch this small is cut so (batchChunkSize)
	for round, tp := range []string{"tcp", "tcp", "quic", "tcp"} {
		switch round {
		case 1:
			// A sender of the build before, sending the same folder again.
			send.features = slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureSame })
		case 2:
			send.features = nil
			writeFile(t, filepath.Join(src, "new.jpg"), 100<<10)
			edit[chunk+7] ^= 0xff // its second chunk
			if err := os.WriteFile(filepath.Join(src, "sub", "edit.bin"), edit, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		received := resultsOf(t, recv, Receiving, 1)
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != res.Files {
			t.Fatalf("send %d: %s %q, %d of %d files verified", round+1, res.State, res.Err, res.Verified, res.Files)
		}
		r := next(t, received)
		if r.State != StateDone {
			t.Fatalf("received %d: %s %q", round+1, r.State, r.Err)
		}
		var sent, kept int64
		switch round {
		case 0, 1:
			sent, kept = res.TotalBytes, 0
		case 2:
			// new.jpg, edit.bin's second chunk and note.txt; the rest was there.
			sent, kept = 100<<10+chunk+100, 200<<10+3<<20+5+3<<20-chunk
		case 3:
			// The same again: edit.bin's changed chunk travels (the
			// leaves are of "edit.bin"), and the file it makes is
			// "edit (1).bin", kept, not saved as "edit (2).bin".
			sent, kept = chunk+100, 200<<10+3<<20+5+3<<20-chunk+100<<10
		}
		if res.Bytes != sent || res.Kept != kept || r.Kept != kept {
			t.Errorf("send %d over %s: sent %d bytes and the receiver kept %d (it says %d); want %d and %d",
				round+1, tp, res.Bytes, res.Kept, r.Kept, sent, kept)
		}
	}
	dst := filepath.Join(recv.DownloadDir(), "Photos")
	got := filesUnder(t, dst)
	want := []string{"a.jpg", "big.bin", "new.jpg", "note.txt", "sub/edit (1).bin", "sub/edit.bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("the folder holds %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "edit (1).bin")); err != nil || !slices.Equal(b, edit) {
		t.Errorf("the changed file's second version: %d bytes (%v), not what was sent", len(b), err)
	}
	edit[chunk+7] ^= 0xff
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "edit.bin")); err != nil || !slices.Equal(b, edit) {
		t.Errorf("the changed file's first version is not as it was: %d bytes (%v)", len(b), err)
	}
	noPartials(t, recv.DownloadDir())

	stranger := testEngine(t, Options{Name: "Stranger"})
	received := resultsOf(t, recv, Receiving, 1)
	res := sendWait(t, stranger, target(recv), []string{src}, SendOptions{})
	if res.State != StateDone {
		t.Fatalf("a device not trusted: %s %q", res.State, res.Err)
	}
	next(t, received)
	if res.Bytes != res.TotalBytes || res.Kept != 0 {
		t.Errorf("a device not trusted sent %d of %d bytes (%d kept): it must send them all, hearing nothing of what is here", res.Bytes, res.TotalBytes, res.Kept)
	}
}

// filesUnder lists the files under dir, slash-separated, relative to it,
// in lexical order.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(name string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(dir, name)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
